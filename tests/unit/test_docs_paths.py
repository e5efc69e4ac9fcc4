"""Docs and prose that stay true (issue 45): tools/check_paths.py finds repository paths named in Markdown and in
Python comments and docstrings that do not exist, the repository names none, the README stays short, and the
benches import each other without a cycle."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_paths", ROOT / "tools" / "check_paths.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_paths"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_stale_paths_in_markdown_comments_and_docstrings_are_found(tmp_path: Path) -> None:
    _plant(
        tmp_path,
        {
            ".gitignore": "bench/results/*\nclient/dist/\n",
            "server/ragchat/chat/engine/loop.py": '"""The loop (server/ragchat/chat/engine/loop.py)."""\n',
            "server/ragchat/app.py": (
                '"""Built by the root (server/runtime.py, moved)."""\n\n'
                "# see ragchat/chat/engine/loop.py and ragchat/chat/answer.py\n"
                "x = 'server/not/checked.py'  # strings that are not docstrings are code, not prose\n"
            ),
            "docs/guide.md": (
                "The loop is `server/ragchat/chat/engine/loop.py`; the old answer was `ragchat/chat/answer.py`.\n"
                "Results go to `bench/results/run.json` (git-ignored output); the build to `client/dist/`.\n"
                "Not paths: ghcr.io/ragchat/ragchat:0.5, ~/.cache/ragchat/onnx, client/server errors, "
                "`tests/<name>.py`, `ragchat/_bundle/client`.\n"
                "[ok](other.md#x) [gone](missing.md) [web](https://example.org/a.md) [here](#anchor)\n"
            ),
            "docs/other.md": "# x\n",
            "docs/history/old.md": "`server/chat/loop.py` was here.\n",
        },
    )
    stale = {(s.file, s.line, s.ref) for s in _tool().check(tmp_path)}
    assert stale == {
        ("server/ragchat/app.py", 1, "server/runtime.py"),
        ("server/ragchat/app.py", 3, "ragchat/chat/answer.py"),
        ("docs/guide.md", 1, "ragchat/chat/answer.py"),
        ("docs/guide.md", 4, "missing.md"),
    }


def test_the_repository_names_no_stale_path() -> None:
    stale = _tool().check(ROOT)
    assert stale == [], "\n".join(map(str, stale))


def test_the_readme_is_short() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size < 10_000, f"README.md is {size} bytes: the rest belongs on a docs/ page"


def _bench_imports(path: Path) -> set[str]:
    """The bench modules a bench file imports, at top level or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("bench.")}
    return found


def test_benches_import_each_other_without_a_cycle() -> None:
    edges = {p.stem: _bench_imports(p) for p in sorted((ROOT / "bench").glob("*.py"))}
    cycles: list[list[str]] = []

    def walk(module: str, path: list[str]) -> None:
        for target in sorted(edges.get(module, ())):
            if target in path:
                cycles.append([*path[path.index(target) :], target])
            elif len(path) < len(edges):
                walk(target, [*path, target])

    for module in edges:
        walk(module, [module])
    assert cycles == [], "\n".join(" → ".join(c) for c in cycles)
