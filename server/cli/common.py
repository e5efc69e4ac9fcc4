"""What every command shares: running an async command, and the local principal."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from server.settings import Settings

Command = Callable[[Settings, argparse.Namespace], int]


def run_async(fn: Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, Any]]) -> Command:
    def run(settings: Settings, args: argparse.Namespace) -> int:
        return int(asyncio.run(fn(settings, args)) or 0)

    return run


def where(settings: Settings) -> str:
    """Which database a command uses, for its first line of output."""
    if settings.database_url:
        return "DATABASE_URL"
    return f"embedded Postgres in {settings.data_dir}"
