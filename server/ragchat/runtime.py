"""The composition root: settings → database → pool → providers → services, built once.

`serve`, `worker`, every CLI command, `eval`, the benches and the test fixtures open a `Runtime` here and
take what they need from it. Tests pass `Overrides` (a shared pool, the session's embedding model, an LLM
provider); whatever is passed in is used as it is and not closed.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from ragchat.accounts import passwords
from ragchat.accounts.oidc_service import OidcService
from ragchat.accounts.service import AccountService
from ragchat.audit.service import AuditLog
from ragchat.chat.runs import RunRegistry
from ragchat.chat.service import ChatService
from ragchat.chat.store.speeds import SpeedKeeper
from ragchat.db.capabilities import Capabilities, detect
from ragchat.db.pool import Database, Pool, make_pool, prepare_database
from ragchat.db.ratelimit import RateLimiter
from ragchat.db.replicas import ReadRouter, build_router
from ragchat.db.watchdog import DatabaseWatchdog
from ragchat.documents.api.service import DocumentService, build_document_service
from ragchat.documents.catalog.service import CatalogService, owner_counts
from ragchat.documents.collections.service import CollectionService
from ragchat.documents.metadata.extraction import MetadataExtractor
from ragchat.observability.logs import say
from ragchat.policy.request import RequestPolicy
from ragchat.preferences.service import PreferencesService, environment_defaults
from ragchat.providers.embeddings import build_embedder
from ragchat.providers.embeddings.base import EmbeddingProvider
from ragchat.providers.llm import build_llm
from ragchat.providers.llm.base import LLMProvider
from ragchat.providers.llm.status_cache import StatusCache
from ragchat.retrieval.expansion import LLMExpander
from ragchat.retrieval.rerank_http import build_reranker
from ragchat.retrieval.search import Searcher
from ragchat.settings import Settings
from ragchat.vectors.indexes import upgrade_indexes
from ragchat.vectors.reembed import Reembedder
from ragchat.vectors.registry import SpaceRegistry

log = logging.getLogger(__name__)


@dataclass
class Overrides:
    """Parts built elsewhere (tests, benches): used as given, never closed by the runtime."""

    pool: Pool | None = None
    embedder: EmbeddingProvider | None = None
    llm: LLMProvider | None = None
    rerank_llm: LLMProvider | None = None
    # embedders a stored space may name (tests: the bundled model, loaded once per process, under a remote one)
    known_embedders: tuple[EmbeddingProvider, ...] = ()


@dataclass
class Runtime:
    settings: Settings
    pool: Pool
    llm: LLMProvider
    embedder: EmbeddingProvider  # the configured model (EMBED_PROVIDER / EMBED_MODEL)
    spaces: SpaceRegistry
    reembedder: Reembedder
    searcher: Searcher
    documents: DocumentService
    chat: ChatService
    accounts: AccountService
    oidc: OidcService  # single sign-on (inert while OIDC_ISSUER is unset)
    collections: CollectionService
    limiter: RateLimiter
    preferences: PreferencesService
    policy: RequestPolicy  # every door resolves and checks a request here (readable ids, options, rates)
    llm_status: StatusCache  # /api/health's view of the LLM, probed in the background
    audit: AuditLog  # the audit log every domain records its actions in (the AuditWriter of core/audit.py)
    database: Database | None = None
    watchdog: DatabaseWatchdog | None = None  # when the runtime opened the database itself
    capabilities: Capabilities | None = None  # the database's versions and what they allow, read at start
    reads: ReadRouter | None = None  # where searches and listings run (DATABASE_READ_URL's replicas, else `pool`)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    @property
    def corpus(self) -> CatalogService:
        """An owner's documents as the evaluation reads them (core/ownership.py `Corpus`)."""
        return self.documents.catalog

    def spawn(self, make: Callable[[], Awaitable[Any]], name: str) -> asyncio.Task[Any]:
        """A background task owned by the runtime (cancelled when it closes)."""
        task = asyncio.create_task(make(), name=name)  # type: ignore[arg-type]
        self.tasks.append(task)
        task.add_done_callback(self._reap)
        return task

    def _reap(self, task: asyncio.Task[Any]) -> None:
        if task in self.tasks:
            self.tasks.remove(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def startup_problems(self) -> list[str]:
        """What a user should fix, in words: the LLM unreachable or missing, embeddings mismatched."""
        problems: list[str] = []
        status = await self.llm_status.get()
        if status.message:
            problems.append(status.message)
        spaces = await self.spaces.status()
        if spaces["message"]:
            problems.append(spaces["message"])
        setup = await self.accounts.setup_notice()  # a server others can reach: first admin by setup token only
        if setup:  # said, not logged: the link's token is for the operator's eyes, where log lines mask tokens
            say(setup[0], "setup_required", stream=sys.stderr, url=setup[1])
        return problems


@asynccontextmanager
async def open_runtime(settings: Settings, overrides: Overrides | None = None) -> AsyncIterator[Runtime]:
    """Everything a process needs, opened in order and closed in reverse."""
    given = overrides or Overrides()
    async with AsyncExitStack() as stack:
        database: Database | None = None
        watchdog: DatabaseWatchdog | None = None
        pool = given.pool
        if pool is None:
            database = await asyncio.to_thread(prepare_database, settings.database)
            stack.callback(database.close)
            owned = make_pool(
                database.uri,
                min_size=settings.database.db_pool_min,
                max_size=settings.database.db_pool_max,
                timeout=settings.database.db_pool_timeout_s,
                prepared_statements=settings.database.database_prepared_statements,
            )
            await owned.open(wait=True)
            stack.push_async_callback(owned.close)
            pool = owned
            if settings.database.db_watchdog_interval_s > 0:
                watchdog = DatabaseWatchdog(
                    owned,
                    database.uri,
                    embedded=database.embedded,
                    interval_s=settings.database.db_watchdog_interval_s,
                    timeout_s=settings.database.db_probe_timeout_s,
                )

        async with pool.connection() as conn:
            capabilities = await detect(conn, embedded=database is not None and database.embedded is not None)
            await upgrade_indexes(conn)
        log.info("database: %s", capabilities.describe())

        embedder = given.embedder
        if embedder is None:
            embedder = await asyncio.to_thread(build_embedder, settings.embeddings, settings.llm)
            stack.push_async_callback(embedder.close)

        def embedder_factory(provider: str, model: str) -> EmbeddingProvider:
            return build_embedder(settings.embeddings, settings.llm, provider, model)

        spaces = SpaceRegistry(
            pool,
            embedder,
            embedder_factory,
            refresh_s=settings.embeddings.spaces_refresh_s,
            known=given.known_embedders,
        )
        stack.push_async_callback(spaces.close)

        llm = given.llm
        if llm is None:
            llm = build_llm(settings.llm, json_shards=settings.retrieval.rerank_client_shards)
            stack.push_async_callback(llm.close)
        rerank_llm = given.rerank_llm or llm
        llm_status = StatusCache(llm, settings.llm.chat_model, refresh_s=settings.server.llm_status_refresh_s)
        stack.push_async_callback(llm_status.close)

        reranker = build_reranker(
            rerank_llm, settings.retrieval, rerank_model=settings.llm.rerank_model, chat_model=settings.llm.chat_model
        )
        stack.push_async_callback(reranker.close)
        reads = build_router(pool, settings.database)
        if reads.replicas:
            await reads.open()  # says in the log which replicas are usable, and why not the others
            stack.push_async_callback(reads.close)
        expander = LLMExpander(rerank_llm, settings.retrieval, settings.llm.effective_rerank_model)  # the reranker's
        searcher = Searcher(pool, spaces, settings.retrieval, reranker, reads, expander)
        runs = RunRegistry()  # chat answers in progress; closed first: they are saved before the pool closes
        stack.push_async_callback(runs.close)
        limiter = RateLimiter(pool)
        audit = AuditLog(pool, settings.audit)
        defaults = environment_defaults(settings.llm, settings.retrieval, settings.ingestion)
        preferences = PreferencesService(pool, defaults, audit)
        accounts = open_account_service(pool, settings, limiter, audit)
        oidc = OidcService(
            pool,
            settings.oidc,
            limiter,
            accounts=accounts,
            account=settings.accounts,
            login_per_min=settings.limits.rate_login_per_min,
        )
        stack.push_async_callback(oidc.close)
        await passwords.warm()
        extractor = MetadataExtractor(
            pool, llm, settings.ingestion, preferences.chose_metadata_extraction, model=settings.llm.chat_model
        )
        documents = build_document_service(
            pool,
            spaces,
            settings.ingestion,
            accounts.names,
            extractor,
            embed_batch_size=settings.embeddings.embed_batch_size,
            chat_model=settings.llm.chat_model,
            audit=audit,
            reads=reads,
        )
        runtime = Runtime(
            settings=settings,
            pool=pool,
            llm=llm,
            embedder=embedder,
            spaces=spaces,
            reembedder=Reembedder(
                pool,
                spaces,
                batch_size=settings.embeddings.embed_batch_size * 4,
                grace_s=settings.embeddings.reembed_grace_s,
            ),
            searcher=searcher,
            documents=documents,
            chat=ChatService(
                pool,
                llm,
                searcher,
                settings.llm,
                embedder=embedder,
                retrieval=settings.retrieval,
                limits=settings.limits,
                runs=runs,
                audit=audit,
                finder=searcher,
                reader=documents.catalog,
                limiter=limiter,
            ),
            accounts=accounts,
            oidc=oidc,
            collections=CollectionService(pool, audit, accounts.names, accounts.is_active),
            limiter=limiter,
            preferences=preferences,
            policy=RequestPolicy(
                pool, settings.retrieval, settings.limits, settings.llm, preferences.effective, limiter
            ),
            llm_status=llm_status,
            audit=audit,
            database=database,
            watchdog=watchdog,
            capabilities=capabilities,
            reads=reads,
        )
        speeds = SpeedKeeper(pool, llm.speed)  # the models' measured speeds, kept across restarts
        await speeds.restore()
        stack.push_async_callback(speeds.save)  # before the pool closes (the stack closes in reverse)
        runtime.spawn(speeds.run, "llm-speeds")
        if watchdog is not None:
            runtime.spawn(watchdog.run, "db-watchdog")
        if reads.replicas:
            runtime.spawn(reads.loop, "read-replicas")
        try:
            yield runtime
        finally:
            for task in list(runtime.tasks):
                task.cancel()
            if runtime.tasks:
                await asyncio.gather(*runtime.tasks, return_exceptions=True)


def open_account_service(pool: Pool, settings: Settings, limiter: RateLimiter, audit: AuditLog) -> AccountService:
    """The accounts service, given its groups (the server's address, single sign-on's, the login rate)."""
    return AccountService(
        pool,
        settings.accounts,
        limiter,
        audit,
        sso=settings.oidc,
        server=settings.server,
        login_per_min=settings.limits.rate_login_per_min,
        documents=owner_counts(pool),
    )


@asynccontextmanager
async def open_accounts(settings: Settings) -> AsyncIterator[AccountService]:
    """Only the database and the accounts service: `ragchat user …` needs no model."""
    database = await asyncio.to_thread(prepare_database, settings.database)
    try:
        pool = make_pool(
            database.uri,
            min_size=1,
            max_size=2,
            timeout=settings.database.db_pool_timeout_s,
            prepared_statements=settings.database.database_prepared_statements,
        )
        await pool.open(wait=True)
        try:
            yield open_account_service(pool, settings, RateLimiter(pool), AuditLog(pool, settings.audit))
        finally:
            await pool.close()
    finally:
        database.close()
