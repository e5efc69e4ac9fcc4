"""`ragchat mcp`: the MCP server over stdio, for an AI client on this machine (Claude Desktop, Cursor, …).

It acts as `--user NAME` or the install's first user, like every local command. stdout carries the protocol
only: logs go to stderr, and the SDK points fd 1 at stderr while it serves, so stray prints cannot corrupt it.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from server.cli.common import acting_as, add_user_option, run_async
from server.mcp.server import McpState, build_server
from server.runtime import open_runtime
from server.settings import Settings

log = logging.getLogger("ragchat")


async def serve_stdio(settings: Settings, args: argparse.Namespace) -> int:
    @asynccontextmanager
    async def lifespan(_: object) -> AsyncIterator[McpState]:
        async with open_runtime(settings) as rt:
            principal = await acting_as(rt, args.user)
            log.info("ragchat mcp: serving over stdio as %s", principal.name)
            yield McpState(rt, principal)

    await build_server(lifespan).run_stdio_async()
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("mcp", help="serve the MCP tools over stdio (for Claude Desktop, Cursor, …)")
    add_user_option(m)
    m.set_defaults(func=run_async(serve_stdio))
