"""CLI commands for retrieval: search, eval, reindex."""

from __future__ import annotations

import argparse
from typing import Any


def add_search_commands(sub: argparse._SubParsersAction, wrap: Any) -> None:
    """Register `search`, `eval` and `reindex` on the `ragchat` parser."""
