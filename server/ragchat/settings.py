"""Every setting in one place, read once from the environment (and `.env`) and passed down."""

from __future__ import annotations

import difflib
import ipaddress
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal, Self

import platformdirs
from dotenv import dotenv_values
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict
from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class SearchMode(StrEnum):
    vector = "vector"
    keyword = "keyword"
    hybrid = "hybrid"


#: SearchMode's names, for request and response models (an inline enum in the OpenAPI document)
SearchModeName = Literal["vector", "keyword", "hybrid"]


#: how the vector and keyword rankings are fused (FUSION)
Fusion = Literal["relative", "rrf", "weighted_rrf", "score"]

#: query expansion before the search (QUERY_EXPANSION): none, extra keyword-arm terms, or a hypothetical passage
QueryExpansion = Literal["off", "keywords", "hyde"]


class EmbedProvider(StrEnum):
    sentence_transformers = "sentence-transformers"
    ollama = "ollama"
    openai = "openai"


class LLMProviderName(StrEnum):
    ollama = "ollama"
    openai = "openai"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: a server bound there is reachable from this machine only."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.strip().lower() == "localhost"


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("ragchat", appauthor=False))


class ServerSettings(BaseModel):
    """Settings group: HOST, PORT, the web client, request bodies and the browser protections."""

    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    client_dist: Path | None = None  # built web client; default: the installed package's copy, else <repo>/client/dist
    # request bodies of JSON routes (chat, search, OpenAI /v1, accounts…); refused while streaming (413)
    max_json_kb: int = Field(default=1024, ge=16)
    # Host headers accepted (DNS-rebinding guard); the loopback names and HOST are always added. "*" = any.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Origins besides the server's own that may send state-changing requests (e.g. a TLS proxy's public URL).
    trusted_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    cookie_secure: Literal["auto", "true", "false"] = "auto"  # auto: Secure when the request came over https
    # reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses or networks; "*": all).
    # Nobody by default: the per-IP login limit uses the connecting address (server/ragchat/web/proxies.py).
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=AliasChoices("trusted_proxies", "forwarded_allow_ips")
    )
    log_format: Literal["text", "json"] = "text"  # json: one object a line (timestamp, level, logger, request id)
    # one more place `ragchat backup`/`restore` look for pg_dump, pg_restore and psql; the newest found among it,
    # the embedded engine's and PATH's is used (db/pg_tools.py)
    pg_bin_dir: Path | None = None
    # the key that signs backups and checks them on restore (HMAC-SHA256; make one: `ragchat backup-key FILE`);
    # BACKUP_KEY itself, or BACKUP_KEY_FILE: a file holding it. Keep it outside the data directory and the backups.
    backup_key: SecretStr | None = None
    backup_key_file: Path | None = None
    # GET /metrics answers `Authorization: Bearer <METRICS_TOKEN>` (a scraper), or an admin's credentials
    metrics_token: SecretStr | None = None
    # A second listener with /metrics, /livez and /readyz only, without a token (bind it where only the
    # scraper reaches): `ragchat worker` has no other; `ragchat serve` opens it beside PORT. Unset: none.
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    metrics_host: str | None = None  # where METRICS_PORT listens; default: HOST
    # /api/health reads the LLM's status from memory; a probe older than this is redone in the background
    llm_status_refresh_s: float = Field(default=15.0, gt=0)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        for entry in v:
            if entry != "*":
                try:
                    ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    raise ValueError(f"TRUSTED_PROXIES: {entry!r} is not an address or a network") from None
        return v

    @property
    def metrics_secret(self) -> str:
        """METRICS_TOKEN as text ("" when unset)."""
        value = self.metrics_token
        return value.get_secret_value() if isinstance(value, SecretStr) else (value or "")

    @field_validator("client_dist", mode="after")
    @classmethod
    def _expand_client_dist(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("allowed_hosts", "trusted_origins", "trusted_proxies", mode="before")
    @classmethod
    def _comma_list(cls, v: object) -> object:
        if isinstance(v, str) and not v.strip().startswith("["):
            return [item.strip() for item in v.split(",") if item.strip()]
        return v

    @property
    def host_allowlist(self) -> list[str]:
        """ALLOWED_HOSTS plus the loopback names and the configured HOST (unless it is a wildcard address)."""
        hosts = ["localhost", "127.0.0.1", "::1", *self.allowed_hosts]
        if self.host not in ("0.0.0.0", "::", ""):
            hosts.append(self.host)
        return list(dict.fromkeys(h.lower() for h in hosts))

    @property
    def max_json_bytes(self) -> int:
        return self.max_json_kb * 1024


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


class DatabaseSettings(BaseModel):
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


class LLMSettings(BaseModel):
    """Settings group: the chat model, its server, and the chat loop."""

    llm_provider: LLMProviderName = LLMProviderName.ollama
    ollama_host: str = "http://127.0.0.1:11434"
    openai_base_url: str = "http://127.0.0.1:8080/v1"
    openai_api_key: SecretStr | None = None
    chat_model: str = "llama3.2"
    # Streamed calls (providers/llm/streaming.py): LLM_TIMEOUT_S is the least time allowed before the first token
    # (more when the prompt is long for the model's measured prompt speed × LLM_FIRST_TOKEN_FACTOR), and the whole
    # time of a non-streamed call; then at most LLM_STALL_TIMEOUT_S without a new token, LLM_MAX_CALL_S in all
    llm_timeout_s: float = Field(default=120.0, validation_alias=AliasChoices("llm_timeout_s", "ollama_timeout_s"))
    llm_first_token_factor: float = Field(default=3.0, ge=1)
    llm_stall_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_call_s: float = Field(default=3600.0, ge=0)  # 0: no cap
    llm_connect_timeout_s: float = 5.0
    chat_max_tool_rounds: int = 3
    chat_max_message_chars: int = 8000
    chat_history_messages: int = 20
    chat_history_chars: int = 12000
    chat_search_limit: int = 6
    # 0: the model reads each passage whole; N: each passage cut to the N sentences around the one that best
    # matches the search: a smaller prompt, a faster first token on a CPU model (xquad-dev with the real 1.5B
    # model, bench/answers.py: 3 against whole passages, first token 38 s against 67 s at the same load, gold
    # answers 19/23 against 19/24; bench/answers_trim.py: 3 kept 23 of the 24 gold spans the passages held)
    chat_passage_sentences: int = Field(default=3, ge=0, le=50)
    # The first model call of a turn must search (OpenAI-compatible `tool_choice: required`; Ollama has no such
    # option). Small local models otherwise answer from memory with invented citations.
    chat_search_first: bool = True
    # A first question that is plainly a lookup ("When did …?", "What is …?") is answered retrieve-first: one search
    # with the question, then one model call (half the calls of the tool loop). auto: those questions; always: every
    # first question; never: the tool loop decides (bench/answers.py measures both)
    chat_retrieve_first: Literal["auto", "always", "never"] = "auto"
    # false: retrieve-then-answer (search with the question, passages in the prompt) for models without tool
    # calling; also chosen automatically when the server says the model does not support tools
    chat_use_tools: bool = True
    # true: when no passage matches the question well enough (every search of the turn below CONFIDENCE_FLOOR),
    # answer "the documents do not cover this" instead of letting the model answer from its own knowledge.
    # The default of the per-user preference `documents_only` (a thread may override it)
    chat_documents_only: bool = False
    # true: after a new thread's first answer, one short LLM call titles the thread (the trimmed question
    # stays the title when it fails); it runs after the answer is saved and never delays the stream
    chat_title_generation: bool = True
    chat_title_timeout_s: float = 20.0
    # retrieve-then-answer: a follow-up is rewritten into a standalone search query from the thread (one short
    # call, at most CHAT_REWRITE_TIMEOUT_S; the raw question on timeout, error or garbage)
    chat_rewrite_followups: bool = True
    chat_rewrite_timeout_s: float = Field(default=10.0, gt=0, le=120)
    chat_temperature: float | None = None  # None: the model server's default
    # whole-document summaries and comparisons (chat/engine/summarize.py): sections read per request, map calls per
    # request, and the window assumed when the model's is unknown (CHAT_CONTEXT_TOKENS, else the server's)
    summary_max_sections: int = Field(default=2000, ge=1, le=100_000)
    summary_max_parts: int = Field(default=48, ge=1, le=1000)
    summary_context_tokens: int = Field(default=4096, ge=1024)
    # Prompt + answer must fit the model's context: None asks the server (llama.cpp /props; Ollama's num_ctx).
    chat_context_tokens: int | None = None
    chat_answer_reserve_tokens: int = 512
    # Verified citations (server/ragchat/chat/engine/citations.py): true adds one LLM call per answer that judges
    # each cited claim against its passage; false (default) keeps the lexical + embedding check only
    citation_judge: bool = False
    # /v1, MCP `ask` and `ragchat search --rag`: the verification also as footnotes under the answer's text
    rag_footnotes: bool = False
    citation_judge_timeout_s: float = 30.0
    rerank_model: str | None = None  # defaults to chat_model

    @property
    def openai_key(self) -> str | None:
        """OPENAI_API_KEY as text (None when unset)."""
        value = self.openai_api_key
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    @property
    def effective_rerank_model(self) -> str:
        return self.rerank_model or self.chat_model


class EmbeddingSettings(BaseModel):
    """Settings group: the embedding model and its runtime, and embedding-space switches."""

    embed_provider: EmbedProvider = EmbedProvider.sentence_transformers
    embed_model: str = "all-MiniLM-L6-v2"
    embed_dim: int | None = None  # remote models: asked of the model when unset
    embed_batch_size: int = 64
    # threads that embed documents in one process (0 = every core it may use); give each of N workers cores/N
    embed_threads: int = Field(default=0, ge=0, le=256)
    embed_timeout_s: float = 60.0  # one remote embedding request
    reembed_grace_s: float = 5.0  # after a switch, old vectors stay this long for searches already under way
    spaces_refresh_s: float = 2.0  # how often a process re-reads which embedding space is active
    # queries on a bfloat16 copy of the model: auto = when the CPU has native bf16 matmuls (and it agrees)
    query_embed_precision: Literal["auto", "fp32", "bf16"] = "auto"
    # the local model's runtime: onnx-int8 (ONNX Runtime, int8, exported once and cached) or torch (float32)
    embed_backend: Literal["onnx-int8", "torch"] = "onnx-int8"
    embed_cache_dir: Path | None = None  # where the ONNX export is cached (default: the user's cache dir)


class RetrievalSettings(BaseModel):
    """Settings group: search: modes, fusion, the keyword scorer, confidence tiers, the LLM rerank."""

    search_mode: SearchMode = SearchMode.hybrid
    search_limit_max: int = 100
    rrf_k: int = 60
    fusion: Fusion = "relative"
    fusion_vector_weight: float | None = Field(default=None, ge=0, le=1)  # None: the method's own default
    # the text-search configurations (languages) the embedding model understands, comma-separated; * = any (a
    # multilingual model such as bge-m3). A scope whose documents are all in other languages fuses with
    # FUSION_VECTOR_WEIGHT_OTHER_LANGUAGES instead (None: FUSION_VECTOR_WEIGHT); 0.6 tuned on xquad-dev only
    # (bench/xquad.py, docs/BENCHMARKS.md session 13), for the relative fusion
    embed_languages: str = "english"
    fusion_vector_weight_other_languages: float | None = Field(default=0.6, ge=0, le=1)
    keyword_scorer: Literal["bm25", "ts_rank"] = "bm25"
    keyword_candidates: int = 1000
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000)  # at 100k indexed rows
    # ef_search grows as (rows / 100k) ** this above 100k rows (0: fixed); filtered HNSW scans multiply it
    hnsw_ef_growth: float = Field(default=0.4, ge=0, le=1)
    hnsw_filtered_ef_factor: float = Field(default=2.0, ge=1, le=10)
    exact_scan_max_rows: int = 20000  # filtered vector queries over at most this many rows scan exactly
    # exhaustive search (GET /api/search/documents): matching passages scanned by default, and the most a
    # caller may ask for (the answer says when it stopped at the bound)
    search_all_limit: int = Field(default=20000, ge=1)
    search_all_max_limit: int = Field(default=200000, ge=1)
    # best-hit cosine tiers, for all-MiniLM-L6-v2 (bench/confidence.py; docs/user/search.md)
    confidence_high: float = 0.60
    confidence_moderate: float = 0.45
    confidence_floor: float = 0.35  # below: "insufficient"
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    rerank_enabled: bool = False
    rerank_concurrency: int = 4
    rerank_candidates_factor: int = 3
    rerank_timeout_s: float = 30.0
    rerank_deadline_s: float = 120.0
    rerank_passage_chars: int = 1000
    # how the LLM scores (retrieval/rerank.py): json = a {"score"} reply per passage; logprobs = P("Yes") from the
    # token probabilities of a one-token Yes/No reply (json where the server returns none); listwise = one call
    # over the top RERANK_LISTWISE_SIZE passages, read from the label probabilities (a JSON ranking without them)
    rerank_method: Literal["json", "logprobs", "listwise"] = "json"
    rerank_listwise_size: int = Field(default=10, ge=2, le=20)
    rerank_early_stop: bool = True  # stop scoring lower ranks once the top `limit` all hold the best score
    rerank_client_shards: int = 8  # small HTTP connection pools the parallel rerank calls are spread over
    rerank_provider: Literal["llm", "http"] = "llm"  # http: a cross-encoder server at rerank_url
    rerank_url: str | None = None  # e.g. http://127.0.0.1:8080 (TEI) or http://127.0.0.1:7997 (Infinity)
    # tei: POST /rerank; cohere: POST /v1/rerank (Infinity, llama.cpp, Jina, Cohere)
    rerank_api: Literal["tei", "cohere"] = "cohere"
    rerank_api_key: SecretStr | None = None  # sent as a Bearer token when set
    rerank_batch_size: int = 32  # passages per request to the rerank server
    # one LLM call (RERANK_MODEL or CHAT_MODEL) before the search: keywords = extra terms for the keyword arm,
    # hyde = a hypothetical passage embedded with the query for the vector arm (retrieval/expansion.py)
    query_expansion: QueryExpansion = "off"
    expansion_timeout_s: float = Field(default=20.0, gt=0)
    expansion_max_terms: int = Field(default=8, ge=1, le=24)
    expansion_max_chars: int = Field(default=600, ge=50, le=4000)  # the hypothetical passage's cap

    @field_validator("search_mode", mode="before")
    @classmethod
    def _mode_lower(cls, v: object) -> object:
        if isinstance(v, str):
            value = v.strip().lower()
            if value not in {m.value for m in SearchMode}:
                raise ValueError(f"SEARCH_MODE must be one of vector, keyword, hybrid (got {v!r})")
            return value
        return v


class IngestionSettings(BaseModel):
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


class AccountSettings(BaseModel):
    """Settings group: accounts and sessions."""

    # on: every request needs a session or an API token. off: one person on one machine (loopback only).
    auth: Literal["on", "off"] = "on"
    session_ttl_hours: float = 24 * 14  # a session ends after this long without a request
    # Failed logins never lock an account (server/ragchat/accounts/throttle.py). After this many failures of one
    # username from one client address, that address waits 1 s, 2 s, 4 s... (up to LOGIN_DELAY_MAX_S) before
    # each next try at that name; after this many from anywhere, every try at the name is held up to
    # LOGIN_GLOBAL_DELAY_MAX_S. 0 turns both off. (LOGIN_LOCKOUT_FAILURES is the old name.)
    login_free_failures: int = Field(
        default=5, ge=0, validation_alias=AliasChoices("login_free_failures", "login_lockout_failures")
    )
    login_delay_max_s: float = Field(default=900.0, ge=0)
    login_global_delay_max_s: float = Field(default=2.0, ge=0, le=10)
    login_failure_memory_s: int = Field(default=3600, ge=60)  # failures are forgotten this long after the last
    # Creating the first admin (the first-run page, POST /api/auth/setup) needs this token when the server
    # listens beyond loopback (HOST not 127.0.0.1/::1), so the first stranger to reach a new server does not
    # become its admin. Unset there: `ragchat serve` makes a one-time token and prints the link to use.
    setup_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("RAGCHAT_SETUP_TOKEN", "setup_token")
    )


class OidcSettings(BaseModel):
    """Settings group: sign-in through an OpenID Connect identity provider (on when OIDC_ISSUER is set)."""

    oidc_issuer: str | None = None  # e.g. https://keycloak.example.org/realms/acme (its discovery document's issuer)
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None  # unset: a public client (PKCE only)
    oidc_scopes: str = "openid email profile"
    # create an account on a first sign-in that matches nobody (off: only existing users may sign in this way)
    oidc_auto_create: bool = False
    oidc_admin_group: str | None = None  # members of this group (or role) are admins, the others are not
    # the claim that lists the groups or roles; a dotted path reads a nested one (realm_access.roles)
    oidc_groups_claim: str = "groups"
    oidc_display_name: str = "SSO"  # the login page's button: "Sign in with <name>"
    # where the provider sends the browser back; default: <this server's URL>/api/auth/oidc/callback
    oidc_redirect_url: str | None = None
    oidc_timeout_s: float = Field(default=5.0, gt=0, le=60)  # one request to the provider (discovery, keys, token)
    # a first sign-in may link to the account whose username is the provider's verified email (docs/ACCOUNTS.md)
    oidc_link_by_email: bool = True
    # seconds between re-checks at the provider (refresh grant) of a signed-in SSO user's sessions and API tokens
    oidc_recheck_s: float = Field(default=300.0, ge=1, le=86400)
    local_login_enabled: bool = True  # false: usernames and passwords no longer sign in (SSO and API tokens do)

    @field_validator("oidc_issuer", "oidc_client_id", "oidc_admin_group", "oidc_redirect_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, v: object) -> object:
        return None if isinstance(v, str) and not v.strip() else v

    @model_validator(mode="after")
    def _check_oidc(self) -> Self:
        if self.oidc_issuer is not None:
            if not self.oidc_issuer.startswith(("https://", "http://")):
                raise ValueError(f"OIDC_ISSUER must be an http(s) URL (got {self.oidc_issuer!r})")
            if not self.oidc_client_id:
                raise ValueError("OIDC_ISSUER is set: OIDC_CLIENT_ID must be set too")
            if "openid" not in self.oidc_scopes.split():
                raise ValueError(f"OIDC_SCOPES must include 'openid' (got {self.oidc_scopes!r})")
        return self

    @property
    def oidc_enabled(self) -> bool:
        return self.oidc_issuer is not None

    @property
    def oidc_secret(self) -> str | None:
        value = self.oidc_client_secret
        return value.get_secret_value() if isinstance(value, SecretStr) else value


class LimitSettings(BaseModel):
    """Settings group: per-user rate limits, the rerank cost cap and the budget of LLM work."""

    # per-minute limits (per user; login per client IP and per username); 0 disables one
    rate_login_per_min: int = 10
    rate_chat_per_min: int = 20
    rate_search_per_min: int = 120
    rate_rerank_candidates_per_min: int = 600
    rerank_max_candidates: int = 60  # one request's limit × RERANK_CANDIDATES_FACTOR may not exceed this
    # the budget of LLM work (chat/engine/llm_budget.py): model calls per user per minute, charged for every call a
    # message makes (loop rounds, summary map/reduce parts, LLM rerank, titles); per message: tool calls and
    # whole-document summaries; per user: summaries per hour and running at once. 0 disables one
    rate_llm_calls_per_min: int = Field(default=120, ge=0)
    chat_max_tool_calls: int = Field(default=8, ge=0)
    summary_max_per_message: int = Field(default=1, ge=0)
    rate_summaries_per_hour: int = Field(default=20, ge=0)
    summary_max_running: int = Field(default=2, ge=0)


class AuditSettings(BaseModel):
    """Settings group: the audit log (who signed in, shared, deleted, changed what; what each answer showed)."""

    audit_retention_days: int = Field(default=365, ge=0, le=36500)  # rows older than this are purged; 0 keeps all
    audit_purge_interval_s: float = Field(default=3600.0, gt=0)  # how often a server purges old rows
    # reads recorded as `document.read` rows: off, shared (others' documents read: opened, file, chunks, search
    # hits, MCP), or all (one's own too); one row per request, at most 100 document ids listed
    audit_reads: Literal["off", "shared", "all"] = "shared"


# BaseSettings narrows BaseModel's `model_config` type; the groups keep BaseModel's (nothing else differs)
class Settings(  # pyright: ignore[reportIncompatibleVariableOverride]
    BaseSettings,
    ServerSettings,
    DatabaseSettings,
    LLMSettings,
    EmbeddingSettings,
    RetrievalSettings,
    IngestionSettings,
    AccountSettings,
    OidcSettings,
    LimitSettings,
    AuditSettings,
):
    """Environment variables (case-insensitive). `.env.example` lists them all with defaults.

    The fields are declared in groups (the classes above); a service that needs one group takes that class,
    and is given `settings.<group>` (the same object, typed as the group), so it sees only its own fields."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    @property
    def server(self) -> ServerSettings:
        return self

    @property
    def database(self) -> DatabaseSettings:
        return self

    @property
    def llm(self) -> LLMSettings:
        return self

    @property
    def embeddings(self) -> EmbeddingSettings:
        return self

    @property
    def retrieval(self) -> RetrievalSettings:
        return self

    @property
    def ingestion(self) -> IngestionSettings:
        return self

    @property
    def accounts(self) -> AccountSettings:
        return self

    @property
    def oidc(self) -> OidcSettings:
        return self

    @property
    def limits(self) -> LimitSettings:
        return self

    @property
    def audit(self) -> AuditSettings:
        return self


# ---- unknown variables -------------------------------------------------------------------------------------
#: prefixes other programs own too (Ollama's server reads OLLAMA_MODELS…; OpenAI's SDK OPENAI_ORG_ID…): in the
#: process environment, a name with one of them is ours only when it is close to one of our names
_SHARED_PREFIXES = ("OLLAMA_", "OPENAI_")
#: ragchat's variables that are not settings: the CLI's (server, token, password) and the tests' and benches'
OTHER_VARIABLES = frozenset(
    {
        "RAGCHAT_SERVER",
        "RAGCHAT_TOKEN",
        "RAGCHAT_PASSWORD",
        "RAGCHAT_CACHE_DIR",
        "RAGCHAT_REAL_LLM",
        "RAGCHAT_FUZZ_EXAMPLES",
        "RAGCHAT_CHUNK_BENCH_MB",
        "RAGCHAT_WHEEL_VENV",
    }
)


def setting_names() -> dict[str, str]:
    """Every environment variable ragchat reads (upper case) → the setting (field) it sets."""
    names: dict[str, str] = {}
    for field_name, info in Settings.model_fields.items():
        names[field_name.upper()] = field_name
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias] if alias else []
        for choice in choices:
            if isinstance(choice, str):
                names[choice.upper()] = field_name
    return names


def _prefixes(names: Iterable[str]) -> set[str]:
    """`RAGCHAT_` and every first word two or more of our names share (`CHAT_`, `RERANK_`, `DB_`…)."""
    counts = Counter(name.split("_", 1)[0] + "_" for name in names if "_" in name)
    return {"RAGCHAT_"} | {prefix for prefix, n in counts.items() if n >= 2}


def unknown_settings(environ: Mapping[str, str], dotenv: Iterable[str] = ()) -> list[str]:
    """Warnings for variables that look like ragchat settings but are none (a typo would otherwise be ignored
    without a word): a `.env` key or an environment variable with one of our prefixes, or close to one of our
    names. Each names the closest setting."""
    known = setting_names()
    prefixes = _prefixes(known)
    warnings: list[str] = []
    seen: set[str] = set()
    for origin, keys in (("in .env", dotenv), ("in the environment", environ)):
        for key in keys:
            name = key.strip().upper()
            if not name or name in known or name in OTHER_VARIABLES or name in seen:
                continue
            close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
            prefix = next((p for p in prefixes if name.startswith(p)), None)
            shared = origin != "in .env" and prefix is not None and prefix.startswith(_SHARED_PREFIXES)
            if not close and (prefix is None or shared):
                continue
            seen.add(name)
            guess = close or difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
            hint = f"did you mean {guess[0]}?" if guess else "see .env.example for the settings"
            warnings.append(f"{key} ({origin}) is not a ragchat setting and is ignored: {hint}")
    return warnings


def warn_unknown_settings(env_file: str | Path | None = ".env") -> list[str]:
    """Log `unknown_settings` for this process's environment and `.env` (at start-up); returns them."""
    keys: list[str] = []
    if env_file is not None and Path(env_file).is_file():
        keys = [str(k) for k in dotenv_values(env_file)]
    warnings = unknown_settings(os.environ, keys)
    for warning in warnings:
        logging.getLogger("ragchat.settings").warning("%s", warning)
    return warnings
