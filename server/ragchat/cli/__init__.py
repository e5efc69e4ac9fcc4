"""The `ragchat` command: serve, worker, ingest, sync, search, eval, reembed, user, login, mcp."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import psycopg
from pydantic import ValidationError

from ragchat import __version__
from ragchat.cli import (
    backup,
    documents,
    evaluation,
    mcp,
    metadata,
    migrations,
    models,
    remote,
    search,
    sync,
    users,
    vectors,
)
from ragchat.cli.common import (
    Parser,
    check_database_url,
    check_port,
    database_unreachable,
    preflight_database,
    run_server,
)
from ragchat.core.errors import RagchatError
from ragchat.observability import tracing
from ragchat.observability.logs import configure_logging, say
from ragchat.settings import Settings, is_loopback, warn_unknown_settings

log = logging.getLogger("ragchat")


def serve(settings: Settings, args: argparse.Namespace) -> int:
    host = args.host or settings.server.host
    port = args.port or settings.server.port
    if args.host or args.port:  # what the app knows of its address (the setup link, the exposure checks)
        settings = settings.model_copy(update={"host": host, "port": port})
    if settings.accounts.auth == "off" and not is_loopback(host):
        print(
            f"ragchat: refusing to serve on {host} with AUTH=off: anyone who can reach it would own every "
            "document. Use AUTH=on (the default), or bind to 127.0.0.1.",
            file=sys.stderr,
        )
        return 2
    check_port(host, port)  # in use, not allowed, not an address here: said at once, before the slow start-up
    preflight_database(settings)  # a wrong DATABASE_URL: one line, not a traceback from the app's start

    if not is_loopback(host):
        say(
            f"ragchat: listening on {host}: other machines can reach this server. Requests must name a host in "
            f"ALLOWED_HOSTS (now: {', '.join(settings.server.host_allowlist)}); put it behind HTTPS for real use.",
            "exposed",
            stream=sys.stderr,
            host=host,
        )
    url = f"http://{_url_host(host)}:{port}"
    say(f"ragchat: starting on {host}:{port} (auth {settings.accounts.auth})", "starting", host=host, port=port)
    announced: list[Path] = []

    def ready() -> None:
        announced.append(
            remote.announce(settings.database.data_dir, url, settings.accounts.auth)
        )  # commands on this data dir use it
        say(f"ragchat: ready at {url}", "ready", url=url)

    def load() -> Any:  # the app's imports (~10 s on a busy machine) come after the port answers /livez
        from ragchat.app import create_app

        return create_app(settings)

    try:
        started = run_server(load, host=host, port=port, log_level=settings.server.log_level, on_ready=ready)
    finally:
        for path in announced:
            path.unlink(missing_ok=True)
    return 0 if started else 1


def _url_host(host: str) -> str:
    """How a browser on this machine reaches a server bound to `host`."""
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="ragchat", description="Chat with your documents.")
    parser.add_argument("--version", action="version", version=f"ragchat {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the HTTP server")
    s.add_argument("--host", help="default: HOST (127.0.0.1)")
    s.add_argument("--port", type=int, help="default: PORT (8000)")
    s.set_defaults(func=serve)
    documents.add_commands(sub)
    sync.add_commands(sub)
    search.add_commands(sub)
    evaluation.add_commands(sub)
    vectors.add_commands(sub)
    users.add_commands(sub)
    remote.add_commands(sub)
    mcp.add_commands(sub)
    metadata.add_commands(sub)
    migrations.add_commands(sub)
    models.add_commands(sub)
    backup.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"ragchat: configuration error:\n{exc}", file=sys.stderr)
        return 2
    configure_logging("warning", settings.server.log_format)
    warn_unknown_settings()  # a typo in .env or the environment would otherwise be ignored without a word
    if args.command in ("serve", "worker", "reembed"):
        for name in ("ragchat", "uvicorn"):
            logging.getLogger(name).setLevel(settings.server.log_level.upper())
        tracing.setup_from_environment()  # OTEL_EXPORTER_OTLP_ENDPOINT set: spans exported
    try:
        if settings.database.database_url:
            check_database_url(settings.database.database_url)
        return int(args.func(settings, args) or 0)
    except RagchatError as exc:
        print(f"ragchat: {exc.message}", file=sys.stderr)
        return 2
    except psycopg.OperationalError as exc:  # the database unreachable, the password wrong...: what to check
        print(f"ragchat: {database_unreachable(exc, settings)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        tracing.shutdown()  # spans still buffered are exported before the process ends


__all__ = ["main"]
