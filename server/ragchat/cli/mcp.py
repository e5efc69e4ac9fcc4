"""`ragchat mcp`: the MCP server over stdio, for an AI client on this machine (Claude Desktop, Cursor, …).

It acts as `--user NAME` or the install's first user, like every local command. stdout carries the protocol
only: logs go to stderr, anything printed while the runtime opens (the embedded Postgres, the model) goes to
stderr too, and while serving the SDK points fd 1 at stderr, so stray prints cannot corrupt the stream.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager

from ragchat.cli.common import acting_as, add_user_option, open_runtime, run_async
from ragchat.settings import Settings

log = logging.getLogger("ragchat")


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send fd 1 (and everything started meanwhile) to stderr until the protocol owns stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


async def serve_stdio(settings: Settings, args: argparse.Namespace) -> int:
    async with AsyncExitStack() as stack:
        with stdout_to_stderr():
            from ragchat.mcp.server import McpState, build_server, fixed_lifespan

            rt = await stack.enter_async_context(open_runtime(settings))
            principal = await acting_as(rt, args.user)
        log.info("ragchat mcp: serving over stdio as %s", principal.name)
        await build_server(fixed_lifespan(McpState(rt, principal))).run_stdio_async()
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("mcp", help="serve the MCP tools over stdio (for Claude Desktop, Cursor, …)")
    add_user_option(m)
    m.set_defaults(func=run_async(serve_stdio))
