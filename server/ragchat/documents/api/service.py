"""The documents domain's services, one per job, as the composition root wires them: `catalog` (list, read,
delete, collections), `ingestion` (register, queue, process, retry, cancel, re-chunk) and `metadata`."""

from __future__ import annotations

from dataclasses import dataclass

from ragchat.core.audit import AuditWriter
from ragchat.core.ownership import UserNames
from ragchat.db.pool import Pool
from ragchat.db.replicas import ReadRouter
from ragchat.documents.catalog.service import CatalogService
from ragchat.documents.ingest.service import IngestService
from ragchat.documents.metadata.extraction import MetadataExtractor
from ragchat.documents.metadata.service import MetadataService
from ragchat.settings import IngestionSettings
from ragchat.vectors.registry import SpaceRegistry


@dataclass(frozen=True)
class DocumentService:
    catalog: CatalogService
    ingestion: IngestService
    metadata: MetadataService

    @property
    def settings(self) -> IngestionSettings:
        return self.ingestion.settings


def build_document_service(
    pool: Pool,
    spaces: SpaceRegistry,
    settings: IngestionSettings,
    names: UserNames,
    extractor: MetadataExtractor | None = None,
    *,
    embed_batch_size: int,
    chat_model: str,
    audit: AuditWriter,
    reads: ReadRouter | None = None,
) -> DocumentService:
    """`names` names the documents' owners (the accounts domain's lookup, core/ownership.py); `reads`: where the
    listings run (a read replica when one is usable); everything else is on `pool`. `embed_batch_size`
    (EMBED_BATCH_SIZE) and `chat_model` (CHAT_MODEL, the semantic chunker's chooser): the models' settings
    ingestion reads besides its own group."""
    metadata = MetadataService(pool, extractor)
    ingestion = IngestService(
        pool, spaces, settings, metadata, embed_batch_size=embed_batch_size, chat_model=chat_model
    )
    return DocumentService(CatalogService(pool, ingestion.wake, names, audit, reads), ingestion, metadata)
