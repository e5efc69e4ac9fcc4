"""What every command shares: running an async command, whom a local command acts as, running the server, and
the one-line messages for a user's mistakes (a bad id, DATABASE_URL or port) instead of tracebacks."""

from __future__ import annotations

import argparse
import asyncio
import errno
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, NoReturn

from ragchat.core.errors import RagchatError
from ragchat.core.principal import Principal, local_principal
from ragchat.observability import tracing
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

DATABASE_URL_FORM = "postgresql://USER:PASSWORD@HOST:5432/DBNAME"


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong and where the help is, without the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def id_arg(what: str) -> Callable[[str], str]:
    """An argparse type for a document, collection... id: a UUID, given back in its canonical text."""

    def parse(value: str) -> str:
        try:
            return str(uuid.UUID(value.strip()))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a {what} id: ids are UUIDs such as 0b6f3a52-8d0e-4c55-9d8e-2f1c7f0e6a41 "
                f"(`ragchat search` and the web page show them)"
            ) from None

    return parse


def check_database_url(url: str) -> None:
    """A DATABASE_URL libpq cannot parse, as a RagchatError saying the form it takes (its password never shown)."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except ProgrammingError as exc:
        detail = _redact(str(exc).strip().splitlines()[0], url)
        raise RagchatError(
            f"DATABASE_URL is not a PostgreSQL connection URL ({detail}): write it as "
            f"{DATABASE_URL_FORM}, or unset it to use the embedded database"
        ) from None


def database_unreachable(exc: BaseException, settings: Settings) -> str:
    """psycopg's connection failure as one line with what to check."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    detail = _redact(" ".join(lines) or type(exc).__name__, settings.database.database_url or "")
    if not settings.database.database_url:
        return f"the embedded database in {settings.database.data_dir} is not reachable: {detail}"
    return (
        f"cannot connect to the database in DATABASE_URL ({detail}): check the URL ({DATABASE_URL_FORM}), "
        "that the server runs and accepts connections from here, or unset DATABASE_URL for the embedded one"
    )


def preflight_database(settings: Settings, timeout_s: int = 5) -> None:
    """`serve` with DATABASE_URL: connect once before the slow start-up, so a wrong URL, host, password or
    database name is one line (RagchatError), not a traceback from the app's start."""
    if not settings.database.database_url:
        return
    import psycopg

    check_database_url(settings.database.database_url)
    try:
        psycopg.connect(settings.database.database_url, connect_timeout=timeout_s).close()
    except psycopg.OperationalError as exc:
        raise RagchatError(database_unreachable(exc, settings)) from None


def check_port(host: str, port: int) -> None:
    """RagchatError when `host:port` cannot be listened on now (in use, not allowed, not this machine's
    address), found in milliseconds before the slow start-up. Binds as uvicorn (asyncio) does: every address
    the host name resolves to, with SO_REUSEADDR, and closes at once."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise RagchatError(
            f"cannot listen on {host!r}: {exc.strerror}; set HOST (or --host) to an address of "
            "this machine, e.g. 127.0.0.1 or 0.0.0.0"
        ) from None
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise RagchatError(_port_message(host, port, exc)) from None


def _port_message(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use (another `ragchat serve`?): stop that program, or use "
            f"another port: `ragchat serve --port {port + 1 if port < 65535 else 8000}` (or PORT in .env)"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"not allowed to listen on port {port} (ports below 1024 need privileges): use --port 8000"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine: set HOST (or --host) to 127.0.0.1 or 0.0.0.0"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


def _redact(text: str, url: str) -> str:
    """`text` without the password of `url` (psycopg's messages may quote the connection string)."""
    from urllib.parse import urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return text.replace(password, "***") if password else text


def print_json(value: Any) -> None:
    """A listing command's `--json`: one JSON document on stdout (dates as ISO 8601, ids as text)."""
    import json

    json.dump(value, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


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
    if settings.database.database_url:
        return "DATABASE_URL"
    return f"embedded Postgres in {settings.database.data_dir}"


def uvicorn_options(*, host: str, port: int, log_level: str) -> dict[str, Any]:
    """How ragchat runs uvicorn. Its proxy headers are off: the app believes X-Forwarded-* from TRUSTED_PROXIES
    only (web/proxies.py); uvicorn's default would trust any local client. Its access log is off: the app writes
    one line per request, with the request id (observability/logs.py)."""
    return {
        "host": host,
        "port": port,
        "log_level": log_level,
        "timeout_graceful_shutdown": 5,
        "proxy_headers": False,
        "access_log": False,
        "log_config": None,  # uvicorn's lines go through ragchat's handler (observability/logs.py)
    }


def run_server(load: Callable[[], Any], *, host: str, port: int, log_level: str, on_ready: Callable[[], None]) -> bool:
    """Serve the app `load` builds with uvicorn until Ctrl-C or SIGTERM. The port is bound at once and answers
    `/livez` while the app is imported and built (in a thread) and starts (web/starting.py); `on_ready` runs
    once it has started (database migrated, models loaded). False if it never got there (the port was taken,
    or the app's start failed)."""
    import uvicorn

    from ragchat.web.starting import EarlyStart

    def failed() -> None:
        server.should_exit = True

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await super().shutdown(sockets)
            # uvicorn re-raises the SIGTERM it handled once it is done, which ends the process here: export the
            # spans still buffered first
            await asyncio.to_thread(tracing.flush)

    early = EarlyStart(load, on_ready=on_ready, on_failed=failed)
    config = uvicorn.Config(early, **uvicorn_options(host=host, port=port, log_level=log_level), lifespan="on")
    server = Server(config)
    with suppress(KeyboardInterrupt, SystemExit):  # uvicorn exits (SystemExit) when it cannot bind the port
        server.run()
    return server.started and early.started


def format_duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 02 min: what a progress line says is left."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
