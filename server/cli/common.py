"""What every command shares: running an async command, and whom a local command acts as."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from server.core.principal import Principal, local_principal
from server.runtime import Runtime
from server.settings import Settings

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
