"""Settings groups of storage: the database and the documents' ingestion."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, Self

import platformdirs
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict
from pydantic import Field, field_validator, model_validator

from ragchat.settings.group import Group


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("ragchat", appauthor=False))


def split_urls(value: str | None) -> list[str]:
    """DATABASE_READ_URL: one URL or several, comma-separated (blank entries ignored)."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def check_read_urls(value: str | None) -> None:
    """ValueError naming the DATABASE_READ_URL entry psycopg cannot parse (the URL itself is not repeated: it may
    hold a password)."""
    urls = split_urls(value)
    for i, url in enumerate(urls, 1):
        where = f"entry {i} of {len(urls)}" if len(urls) > 1 else "the URL"
        try:
            info = conninfo_to_dict(url)
        except ProgrammingError as exc:
            raise ValueError(f"DATABASE_READ_URL: {where} is not a PostgreSQL connection URL ({exc})") from None
        if not info:
            raise ValueError(f"DATABASE_READ_URL: {where} is empty")
        for port in str(info.get("port") or "5432").split(","):  # libpq checks ports only when it connects
            if not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"DATABASE_READ_URL: {where} is not a PostgreSQL connection URL (port {port!r})")


ENGINE_DEFAULT_MB = 128  # PostgreSQL's own shared_buffers
_SIZE = re.compile(r"^\s*(\d+)\s*(MB|GB)\s*$", re.IGNORECASE)


def parse_size_mb(value: str) -> int | None:
    """`auto` -> None; `512MB` / `4GB` -> megabytes; anything else is a ValueError (the setting validates)."""
    if value.strip().lower() == "auto":
        return None
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"expected auto, off or a size like 512MB or 4GB, got {value!r}")
    n = int(m.group(1)) * (1024 if m.group(2).upper() == "GB" else 1)
    if n < ENGINE_DEFAULT_MB:
        raise ValueError(f"shared_buffers below {ENGINE_DEFAULT_MB}MB is not worth a restart: {value!r}")
    return n


class DatabaseSettings(Group):
    """Settings group: storage: the data directory, the database and its connection pool."""

    database_url: str | None = None
    # false behind a pooler in transaction mode that cannot keep prepared statements (PgBouncer < 1.21)
    database_prepared_statements: bool = True
    # read replicas: one URL or several, comma-separated (streaming replicas of DATABASE_URL). Searches,
    # listings and facets go to a healthy one; writes, job claims and a user's reads right after their own
    # write go to the primary (docs: "When one machine is not enough")
    database_read_url: str | None = None
    # a replica further behind than this (seconds) is skipped until it catches up
    database_read_max_lag: float = Field(default=30.0, gt=0)
    database_read_check_s: float = Field(default=2.0, gt=0)  # how often replicas are checked
    data_dir: Path = Field(default_factory=_default_data_dir, validation_alias="RAGCHAT_DATA_DIR")
    # the embedded PostgreSQL's shared_buffers: auto (half the data, at most a quarter of memory; db/tuning.py),
    # off (the engine's own configuration), or a size such as 2GB. Applied with a restart of the engine.
    embedded_shared_buffers: str = "auto"
    db_pool_min: int = 1
    db_pool_max: int = 10
    db_pool_timeout_s: float = Field(default=10.0, gt=0)  # a request waits this long for a connection (then 503)
    # how often the database is probed (0: never). While it does not answer, requests get a 503 at once and
    # the embedded PostgreSQL is restarted if it died.
    db_watchdog_interval_s: float = Field(default=1.0, ge=0)
    # a probe (the watchdog's, /api/health's) slower than this counts as no answer
    db_probe_timeout_s: float = Field(default=2.0, gt=0)

    @field_validator("database_read_url", mode="after")
    @classmethod
    def _check_read_urls(cls, value: str | None) -> str | None:
        check_read_urls(value)
        return value

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand_data_dir(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("embedded_shared_buffers", mode="after")
    @classmethod
    def _check_shared_buffers(cls, value: str) -> str:
        if value.strip().lower() != "off":
            parse_size_mb(value)  # ValueError: a clear message at start-up
        return value.strip()


class IngestionSettings(Group):
    """Settings group: documents (uploads, URL fetching, parsing limits, chunking, the queue, metadata)."""

    max_upload_mb: float = 50.0  # one file; also one upload request's body (+1 MB for the multipart framing)
    # web pages by URL: fetch private, loopback and link-local addresses too (off: only public addresses, SSRF guard)
    allow_private_urls: bool = False
    url_fetch_timeout_s: float = Field(default=20.0, gt=0)  # one URL fetch, redirects and body included
    chunk_tokens: int = 200
    chunk_overlap: int = 40
    chunk_max_chars: int = Field(default=2000, ge=100)  # characters per chunk, whatever the tokens (no-space runs)
    chunk_strategy: Literal["auto", "line", "sentence", "semantic"] = "auto"  # auto: by file type and shape
    chunk_semantic_llm: bool = False  # the semantic chunker asks CHAT_MODEL to choose among its best cuts
    ingest_workers: int = 1  # in-process background ingestion workers (0 = only `ragchat worker`)
    max_inflated_mb: float = Field(default=200.0, gt=0)  # a zip-based file (.docx) inflated, all parts together
    max_zip_member_mb: float = Field(default=100.0, gt=0)  # one part of a zip-based file, inflated
    max_zip_members: int = Field(default=5000, ge=1)  # parts in a zip-based file
    max_compression_ratio: float = Field(default=200.0, gt=1)  # inflated:compressed of a part over 1 MB (zip bombs)
    max_elements: int = Field(default=200_000, ge=1)  # docx paragraphs + table cells, HTML tags, Markdown blocks
    max_pdf_pages: int = Field(default=2000, ge=1)  # pages in one PDF
    parse_timeout_s: float = Field(default=120.0, gt=0)  # parsing one file (checked between pages / elements)
    max_jsonl_records: int = Field(default=200_000, ge=1)  # records in one BEIR .jsonl corpus
    # OCR (rapidocr-onnxruntime): scanned PDF pages and images (.png .jpg .jpeg .tif .tiff .webp); off when the
    # engine does not import. Off: a scanned PDF fails with a message, images are refused at upload
    ocr_enabled: bool = True
    ocr_max_pixels: int = Field(default=40_000_000, ge=10_000)  # an image (one TIFF frame) over this is refused
    ocr_max_pages: int = Field(default=100, ge=1)  # pages (frames) OCR'd in one document; the rest not read
    ocr_page_timeout_s: float = Field(default=60.0, gt=0)  # recognition on one page, then what was read is kept
    ocr_time_budget_s: float = Field(default=1800.0, gt=0)  # all OCR of one document; later pages not read
    ocr_min_text_chars: int = Field(default=20, ge=0)  # a PDF page whose text layer has fewer characters is OCR'd
    # pixels decoded for OCR (every page's width × height, blank pages too): per document, and per user over the
    # last 24 hours; pages past either are not read, and the document's `ocr` metadata names the limit
    ocr_max_megapixels: float = Field(default=1000.0, gt=0)
    ocr_user_megapixels_per_day: float = Field(default=20_000.0, gt=0)
    # images, PDFs and files over 1 MB are parsed in a child process (killed on cancel, its memory returned):
    # at most this many at once per worker, and at most INGEST_HEAVY_PER_USER of one user's across all workers
    ingest_heavy_slots: int = Field(default=2, ge=1)
    ingest_heavy_per_user: int = Field(default=1, ge=1)
    ingest_cancel_poll_s: float = Field(default=1.0, gt=0)  # how often a worker looks for a cancel while parsing
    max_jsonl_record_kb: int = Field(default=1024, ge=1)  # one line of a BEIR .jsonl corpus
    ingest_lease_s: float = Field(default=60.0, ge=1)  # a worker's hold on a document, renewed every third of it
    ingest_max_attempts: int = Field(default=3, ge=1)  # claims of one document before it is failed for good
    # a document queued again after a passing fault (model or database away) waits this long, doubled per attempt
    ingest_retry_backoff_s: float = Field(default=2.0, ge=0, le=3600)
    metadata_extraction: bool = False  # one LLM call per new document: title, summary, topics, type, language, dates
    # the Postgres text-search configuration of each document's chunks: auto = detected per document (lingua,
    # among the server's stemmers; `simple` when it cannot tell), or one configuration for all, e.g. english
    text_search_config: str = Field(default="auto", pattern=r"^[a-z_]{1,63}$")
    metadata_extraction_timeout_s: float = 60.0  # per call (one retry)
    metadata_extraction_chars: int = 4000  # the document's first characters the model reads

    @model_validator(mode="after")
    def _check_chunks(self) -> Self:
        if self.chunk_overlap >= self.chunk_tokens:
            raise ValueError("CHUNK_OVERLAP must be smaller than CHUNK_TOKENS")
        if not 16 <= self.chunk_tokens <= 256:
            raise ValueError("CHUNK_TOKENS must be between 16 and 256 (the model truncates at 256 word pieces)")
        return self

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def max_upload_request_bytes(self) -> int:
        """One upload request's body: the file limit plus room for the multipart framing and a few fields."""
        return self.max_upload_bytes + 1024 * 1024
