"""The architecture holds: import-linter's contracts (pyproject.toml) pass, and no module cycle exists."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    done = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_import_cycles_between_modules() -> None:
    graph = grimp.build_graph("ragchat", cache_dir=None)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    # a package's __init__ importing its own submodules is a re-export, not a cycle of dependencies
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges.get(module, ())):
            if target.startswith(module + "."):
                continue
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph.modules):
        if module not in state:
            visit(module)
    assert cycles == [], "\n".join(" → ".join(c) for c in cycles)


def test_every_cli_option_has_help() -> None:
    import argparse

    from ragchat.cli import build_parser

    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    walk(subparser, f"{name} {sub}")
            elif not action.help and action.dest != "help":
                missing.append(f"{name}: {action.dest}")

    walk(build_parser(), "ragchat")
    assert missing == []
