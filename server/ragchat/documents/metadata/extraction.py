"""LLM metadata extraction: one call per ready document (title, summary, topics, document type, language, key
dates), validated with Pydantic, merged into its metadata so the values are filterable (`filter=topics=X`).

Runs apart from ingestion (its own loop, one document at a time per worker), so the LLM never holds up the next
document's ingest. A failure (timeout, error, invalid reply, after one retry) leaves the document ready and
records the reason in `documents.metadata_error`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field, field_validator

from ragchat.core.preferences import ChoseMetadataExtraction
from ragchat.db.pool import Pool
from ragchat.documents.metadata import repository as repo
from ragchat.providers.llm.base import LLMProvider
from ragchat.providers.llm.replies import parse_reply
from ragchat.settings import IngestionSettings

log = logging.getLogger(__name__)

MAX_TOPICS = 10
MAX_DATES = 10
STALE_AFTER_S = 600.0  # a document "running" this long lost its extractor (process killed): taken again


def _short(value: Any, limit: int) -> Any:
    return " ".join(value.split())[:limit] if isinstance(value, str) else value


def _items(value: Any, limit: int, chars: int) -> Any:
    """A list of short distinct strings (a lone string is a list of one); overlong ones cut, extra ones dropped."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return value
    out: list[str] = []
    for item in value:
        text = _short(item, chars) if isinstance(item, str) else item
        if isinstance(text, str) and text and text not in out:
            out.append(text)
    return out[:limit]


class ExtractedMetadata(BaseModel):
    """What the model must answer (its JSON schema is sent with the request)."""

    title: str = Field(description="the document's title")
    summary: str = Field(description="two or three sentences")
    topics: list[str] = Field(description="up to 10 short topics (one to three words each)")
    document_type: str = Field(description="e.g. report, contract, receipt, paper, manual, notes, spreadsheet")
    language: str = Field(description="the language the document is written in, e.g. English")
    key_dates: list[str] = Field(default_factory=list, description="important dates, ISO 8601 when possible")

    @field_validator("title", "document_type", "language", mode="before")
    @classmethod
    def _one_line(cls, value: Any) -> Any:
        return _short(value, 200)

    @field_validator("summary", mode="before")
    @classmethod
    def _summary(cls, value: Any) -> Any:
        return _short(value, 500)

    @field_validator("topics", mode="before")
    @classmethod
    def _topics(cls, value: Any) -> Any:
        return _items(value, MAX_TOPICS, 80)

    @field_validator("key_dates", mode="before")
    @classmethod
    def _dates(cls, value: Any) -> Any:
        return _items(value, MAX_DATES, 40)

    def as_metadata(self) -> dict[str, Any]:
        """The non-empty fields, as metadata values (strings and lists of strings); document_type lower-case."""
        values: dict[str, Any] = {
            "title": self.title,
            "summary": self.summary,
            "topics": self.topics,
            "document_type": self.document_type.lower(),
            "language": self.language,
            "key_dates": self.key_dates,
        }
        return {k: v for k, v in values.items() if v}


SCHEMA: dict[str, Any] = ExtractedMetadata.model_json_schema()
SYSTEM_PROMPT = (
    "You read the beginning of a document and describe it. Answer with one JSON object with the keys title, "
    "summary, topics, document_type, language and key_dates, and nothing else. Use only what the text says."
)


def build_messages(filename: str, text: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f'File name: {filename}\n\nThe document\'s beginning:\n"""\n{text}\n"""'},
    ]


def parse_extraction(reply: str | None) -> ExtractedMetadata | None:
    """The reply validated (think blocks, code fences and prose around the object dropped); None if invalid."""
    return parse_reply(reply, ExtractedMetadata)


class ExtractionFailed(Exception):
    """Why a document got no metadata, in words people see (documents.metadata_error)."""


class MetadataExtractor:
    """Extracts metadata for documents queued for it (documents.metadata_status = pending)."""

    def __init__(
        self, pool: Pool, llm: LLMProvider, settings: IngestionSettings, chose: ChoseMetadataExtraction, *, model: str
    ) -> None:
        self.pool = pool
        self.llm = llm
        self.settings = settings
        self.model = model  # CHAT_MODEL
        self.chose = chose  # who chose otherwise than METADATA_EXTRACTION on their page (the preferences domain)

    async def ask(self, filename: str, text: str) -> ExtractedMetadata:
        """One call, and one retry after a timeout, an error or an invalid reply; ExtractionFailed after both."""
        timeout = self.settings.metadata_extraction_timeout_s
        messages = build_messages(filename, text)
        reason = ""
        for _attempt in range(2):
            try:
                reply = await asyncio.wait_for(
                    self.llm.complete_json(model=self.model, messages=messages, schema=SCHEMA, timeout_s=timeout),
                    timeout,
                )
            except TimeoutError:
                reason = f"the language model did not answer within {timeout:g} s (METADATA_EXTRACTION_TIMEOUT_S)"
                continue
            except Exception as exc:  # any provider error: its message says what to fix
                reason = f"the language model failed: {getattr(exc, 'message', None) or exc!r}"
                continue
            parsed = parse_extraction(reply)
            if parsed is not None:
                return parsed
            reason = f"the language model's reply was not valid metadata JSON: {(reply or '')[:200]!r}"
        raise ExtractionFailed(f"{reason} (tried twice)")

    async def extract_one(self, document_id: UUID, filename: str) -> bool:
        """Extract one claimed document's metadata and store it, or store why not; True when it worked."""
        try:
            async with self.pool.connection() as conn:
                text = await repo.leading_text(conn, document_id, self.settings.metadata_extraction_chars)
            if not text.strip():
                raise ExtractionFailed("the document has no text to read")
            found = await self.ask(filename, text)
        except ExtractionFailed as exc:
            log.info("metadata extraction of %s failed: %s", document_id, exc)
            async with self.pool.connection() as conn:
                await repo.fail_extraction(conn, document_id, str(exc))
            return False
        async with self.pool.connection() as conn, conn.transaction():
            await repo.store_extraction(conn, document_id, found.as_metadata())
        return True

    async def run_pending(self, ids: Sequence[UUID] | None = None) -> tuple[int, int]:
        """Extract every ready document waiting (only `ids` when given) until none is left: (done, failed)."""
        done = failed = 0
        while True:
            new_ones = self.settings.metadata_extraction
            chose_otherwise = await self.chose(not new_ones)
            async with self.pool.connection() as conn:
                row = await repo.claim(
                    conn, ids=ids, stale_after_s=STALE_AFTER_S, new_ones=new_ones, chose_otherwise=chose_otherwise
                )
            if row is None:
                return done, failed
            if await self.extract_one(row["id"], row["filename"]):
                done += 1
            else:
                failed += 1

    async def run_worker(self, stop: asyncio.Event, wake: asyncio.Event, poll_s: float = 5.0) -> None:
        """Beside the ingestion worker: extract what is waiting, then sleep until woken or `poll_s` passes."""
        while not stop.is_set():
            wake.clear()
            try:
                done, failed = await self.run_pending()
                if done or failed:
                    log.info("metadata extracted for %d documents (%d failed)", done, failed)
            except Exception as exc:  # the database is away: the next poll tries again
                log.warning("metadata extraction waits: %s", str(exc).splitlines()[0] if str(exc) else repr(exc))
            waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(wake.wait())]
            await asyncio.wait(waiters, timeout=poll_s, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waiters:
                waiter.cancel()
