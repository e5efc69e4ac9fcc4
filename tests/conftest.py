"""Shared fixtures: one embedded Postgres per test run, the real embedding model, a live HTTP server."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ragchat.db.migrate import ensure_vector_extension, migrate
from ragchat.db.pool import make_pool
from ragchat.settings import Settings
from tests.support import interrupt, runtime_dir

runtime_dir.set_for_worker()  # before any embedded server starts (the package reads it on import)

pytest_plugins = ["tests.fakes.plugin", "tests.support.interrupt", "tests.support.failure_log"]


@pytest.fixture(scope="session")
def pg_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database per test process: TEST_DATABASE_URL when set (under pytest-xdist, a database of its
    own for each worker, made on that server: `<name>_gw0`…), else a fresh embedded PostgreSQL for this process
    (each xdist worker has its own temp directory, so its own server)."""
    server = None
    uri = os.environ.get("TEST_DATABASE_URL")
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # gw0, gw1…: set by pytest-xdist in its workers
    if uri and worker:
        uri = worker_database(uri, worker)
    if not uri:
        from ragchat.db.embedded import open_server

        server = open_server(tmp_path_factory.mktemp("pg") / "pgdata", cleanup_mode="delete")
        uri = server.get_uri()
    ensure_vector_extension(uri)
    migrate(uri)
    yield uri
    if server is not None:
        if interrupt.interrupted():  # stop it, and leave its files to pytest's clean-up of old temp dirs
            server.cleanup_mode = "stop"
        server.cleanup()


def worker_database(uri: str, worker_id: str) -> str:
    """`uri` with its database name suffixed by the xdist worker id, the database created afresh (owned by the
    URL's user, so the migrations can create what they need in it)."""
    from urllib.parse import urlsplit, urlunsplit

    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    given = conninfo_to_dict(uri)
    name = f"{given.get('dbname') or given.get('user') or 'postgres'}_{worker_id}"
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    if "://" not in uri:  # key=value form
        return make_conninfo(uri, dbname=name)
    return urlunsplit(urlsplit(uri)._replace(path="/" + name))


def truncate_all(uri: str) -> None:
    with psycopg.connect(uri, autocommit=True) as conn:
        for (index,) in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexname LIKE 'chunk_embeddings_hnsw_%'"
        ).fetchall():
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index)))
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename NOT IN ('users', 'schema_migrations')"
            )
        ]
        if tables:
            conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        conn.execute("DELETE FROM users WHERE id <> '00000000-0000-0000-0000-000000000001'")
        conn.execute(
            "UPDATE users SET username = NULL, password_hash = NULL, name = 'local', is_admin = true, "
            "disabled = false WHERE id = '00000000-0000-0000-0000-000000000001'"
        )


@pytest.fixture
def db(pg_uri: str) -> str:
    """The database URI, emptied before the test."""
    truncate_all(pg_uri)
    return pg_uri


@pytest.fixture
def settings(db: str, tmp_path: Path) -> Settings:
    return make_settings(db, tmp_path)


def make_settings(uri: str, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": uri,
        "data_dir": tmp_path / "data",
        "ingest_workers": 0,
        "ollama_host": "http://127.0.0.1:9",
        "openai_base_url": "http://127.0.0.1:9/v1",
        "llm_timeout_s": 5.0,
        "reembed_grace_s": 0.2,
        "spaces_refresh_s": 0.0,
        # The tests of one user on one machine; tests/integration/test_accounts*.py turn auth and limits on.
        "auth": "off",
        "rate_login_per_min": 0,
        "rate_chat_per_min": 0,
        "rate_search_per_min": 0,
        "rate_rerank_candidates_per_min": 0,
        "rate_llm_calls_per_min": 0,  # tests/integration/test_llm_budget.py turns the LLM budget on
        "rate_summaries_per_hour": 0,
        # One more LLM call after a new thread's first answer would take replies scripted for the next turn:
        # tests that want generated titles turn it on (tests/integration/test_not_covered.py, e2e).
        "chat_title_generation": False,
        # Replies are scripted for the tool loop (a search call, then the answer); the retrieve-first path of plain
        # lookups (CHAT_RETRIEVE_FIRST=auto, the default) has its own tests (tests/integration/test_answer_doors.py).
        "chat_retrieve_first": "never",
        # A measured call at start would take a reply scripted for the test (tests/integration/test_llm_warmup.py)
        "llm_warmup": False,
        # Every passage of a search reaches the model: tests assert on the passages their corpus gives. The default
        # (CHAT_PASSAGE_MIN_RATIO=0.5) has its own tests (tests/integration/test_chat.py, tests/unit/test_chat.py)
        # and the real-model tier's fresh-install test runs with it (tests/real/test_chat_real.py).
        "chat_passage_min_ratio": 0.0,
        # and every passage of a search that matches nothing (CHAT_WEAK_SEARCH_PASSAGES=2 by default: its own
        # tests in tests/unit/test_chat.py and tests/integration/test_not_covered.py)
        "chat_weak_search_passages": 0,
        # Rerank tests assert the scorer's order; the blend with the retrieval position (RERANK_RETRIEVAL_WEIGHT,
        # 0.35 by default) has its own (tests/unit/test_rerank.py, tests/integration/test_rerank_graded.py)
        "rerank_retrieval_weight": 0.0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
async def pool(db: str) -> AsyncIterator[Any]:
    p = make_pool(db, min_size=1, max_size=6)
    await p.open(wait=True)
    yield p
    await p.close()


@pytest.fixture(scope="session")
def embedder() -> Any:
    from ragchat.providers.embeddings.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
async def runtime(settings: Settings, pool: Any, embedder: Any) -> AsyncIterator[Any]:
    """The composition root over the test database, the session's MiniLM and the LLM that `settings` name."""
    from ragchat.runtime import Overrides, open_runtime

    async with open_runtime(settings, Overrides(pool=pool, embedder=embedder)) as rt:
        yield rt


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn running the real app in a thread on 127.0.0.1; `url` is its base URL."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        # bound here and handed to uvicorn, so no other process can take the port between choosing and binding
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        from ragchat.cli.common import uvicorn_options

        # as `ragchat serve` runs it (proxy headers off: the app reads them from TRUSTED_PROXIES only)
        options = uvicorn_options(host="127.0.0.1", port=self.port, log_level="warning")
        config = uvicorn.Config(app, **options, lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("live server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True  # graceful: open streams get uvicorn's timeout_graceful_shutdown
        self.thread.join(timeout=30)
        if self.thread.is_alive():  # a stalled shutdown: drop the connections, the lifespan still closes
            self.server.force_exit = True
            self.thread.join(timeout=30)
        self.sock.close()


@pytest.fixture
def live_app(settings: Settings, embedder: Any) -> Iterator[Any]:
    """Factory: `live_app(**setting_overrides)` starts the real app and returns a LiveServer. The LLM is what
    the settings name (e.g. `ollama_host=fake_ollama.url`), or `llm=` an `LLMProvider`."""
    from ragchat.app import create_app
    from ragchat.runtime import Overrides

    servers: list[LiveServer] = []

    def start(llm: Any = None, **overrides: Any) -> LiveServer:
        app_settings = settings.model_copy(update=overrides)
        local = (
            app_settings.embeddings.embed_provider == "sentence-transformers"
        )  # else the runtime builds the remote one
        given = Overrides(embedder=embedder if local else None, known_embedders=() if local else (embedder,), llm=llm)
        app = create_app(app_settings, overrides=given)
        server = LiveServer(app).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__()
