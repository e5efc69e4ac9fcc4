"""What every command shares: running an async command, whom a local command acts as, running the server."""

from __future__ import annotations

import argparse
import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

from ragchat.core.principal import Principal, local_principal
from ragchat.settings import Settings

if TYPE_CHECKING:
    from ragchat.accounts.service import AccountService
    from ragchat.runtime import Runtime


def open_runtime(settings: Settings) -> AbstractAsyncContextManager[Runtime]:
    """ragchat.runtime.open_runtime, imported when a command needs it: commands that only talk to a server
    (or print help) start without loading the model stack (~1.5 s of imports)."""
    from ragchat.runtime import open_runtime as open_

    return open_(settings)


@asynccontextmanager
async def open_accounts(settings: Settings) -> AsyncIterator[AccountService]:
    from ragchat.runtime import open_accounts as open_

    async with open_(settings) as accounts:
        yield accounts


Command = Callable[[Settings, argparse.Namespace], int]


def run_async(fn: Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, Any]]) -> Command:
    def run(settings: Settings, args: argparse.Namespace) -> int:
        return int(asyncio.run(fn(settings, args)) or 0)

    return run


async def acting_as(rt: Runtime, username: str | None) -> Principal:
    """Who a command on the server's machine acts as: `--user NAME`, else the install's first owner (the local
    user of AUTH=off, whom the first admin account took over)."""
    if not username:
        return local_principal()
    user = await rt.accounts.find_user(username)
    return Principal(user["id"], user["username"], bool(user["is_admin"]))


def add_user_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", metavar="NAME", help="act as this user (default: the first admin / local user)")


def where(settings: Settings) -> str:
    """Which database a command uses, for its first line of output."""
    if settings.database_url:
        return "DATABASE_URL"
    return f"embedded Postgres in {settings.data_dir}"


def uvicorn_options(*, host: str, port: int, log_level: str) -> dict[str, Any]:
    """How ragchat runs uvicorn. Its proxy headers are off: the app believes X-Forwarded-* from TRUSTED_PROXIES
    only (web/proxies.py); uvicorn's default would trust any local client. Its access log is off: the app writes
    one line per request, with the request id (core/logs.py)."""
    return {
        "host": host,
        "port": port,
        "log_level": log_level,
        "timeout_graceful_shutdown": 5,
        "proxy_headers": False,
        "access_log": False,
        "log_config": None,  # uvicorn's lines go through ragchat's handler (core/logs.py)
    }


def run_server(app: Any, *, host: str, port: int, log_level: str, on_ready: Callable[[], None]) -> bool:
    """Serve `app` with uvicorn until Ctrl-C or SIGTERM. `on_ready` runs once the app has started (lifespan
    done: database migrated, models loaded) and the port accepts connections. False if it never got there."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)  # binds the listening socket last, then sets `started`
            if self.started:
                on_ready()

    config = uvicorn.Config(app, **uvicorn_options(host=host, port=port, log_level=log_level))
    server = Server(config)
    with suppress(KeyboardInterrupt):
        server.run()
    return server.started


def format_duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 02 min: what a progress line says is left."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
