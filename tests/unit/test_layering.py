"""The architecture holds: import-linter's contracts (pyproject.toml) pass, and no module cycle exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.imports import import_cycles

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    done = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


#: Imports the "documents in layers" contract forbids: a job's below it (catalog → ingest, the old
#: chunk_store → ingest.queue), a job's sideways (sync → ingest), a door's from below (catalog → api).
UPWARD = {
    "catalog/planted_up.py": "from ragchat.documents.ingest import queue\n",
    "sync/planted_side.py": "import ragchat.documents.ingest.pipeline\n",
    "parsing/planted_door.py": "def later():\n    from ragchat.documents.api.service import DocumentService\n",
}


def test_the_documents_contract_fails_on_planted_upward_imports(tmp_path: Path) -> None:
    """A copy of the package with upward imports planted in documents/ breaks the contract, naming each one
    (the real tree passes: test_import_contracts_are_kept)."""
    shutil.copytree(ROOT / "server" / "ragchat", tmp_path / "ragchat", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    _plant(tmp_path / "ragchat" / "documents", UPWARD)
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}  # the copy before the editable install's finder
    cmd = [exe, "--no-cache", "--contract", "documents-layers"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 1, out
    assert "documents in layers: doors → jobs → catalog → chunking, fetch → parsing BROKEN" in out
    for name in UPWARD:
        assert f"ragchat.documents.{name.removesuffix('.py').replace('/', '.')} ->" in out, (name, out)


def test_no_import_cycles_between_modules() -> None:
    """0 cycles, counting imports inside functions, a package's `__init__` importing its submodules, and the
    ancestor packages an import runs (see tests/support/imports.py)."""
    cycles = import_cycles("ragchat")
    assert cycles == [], "\n".join(" ↔ ".join(c) for c in cycles)


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


PLANTED = {
    "top_level": {
        "a/__init__.py": "",
        "a/one.py": "from a import two\n",
        "a/two.py": "from a.one import *\n",
    },
    "inside_a_function": {
        "b/__init__.py": "",
        "b/one.py": "from b import two\n",
        "b/two.py": "def later():\n    from b import one\n    return one\n",
    },
    "package_to_submodule": {  # parsers -> formats/__init__ -> formats.epub -> parsers (the old parser cycle)
        "c/__init__.py": "",
        "c/parsers.py": "from c.formats import PARSERS\n",
        "c/formats/__init__.py": "from c.formats.epub import parse\nPARSERS = {'.epub': parse}\n",
        "c/formats/epub.py": "from c.parsers import *\ndef parse(): ...\n",
    },
    "ancestor_package": {  # importing d.pkg.leaf runs d/pkg/__init__, which imports the importer
        "d/__init__.py": "",
        "d/user.py": "import d.pkg.leaf\n",
        "d/pkg/__init__.py": "from d import user\n",
        "d/pkg/leaf.py": "",
    },
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_the_cycle_check_fails_on_a_planted_cycle(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(tmp_path, PLANTED[kind])
    monkeypatch.syspath_prepend(str(tmp_path))
    package = next(iter(PLANTED[kind])).split("/")[0]
    assert import_cycles(package) != []


def test_the_cycle_check_passes_a_package_that_only_re_exports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package importing its submodules, which import their siblings, is no cycle: the check is not blind."""
    _plant(
        tmp_path,
        {
            "e/__init__.py": "from e.one import f\n",
            "e/one.py": "from e import two\nf = two.g\n",
            "e/two.py": "def g(): ...\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("e") == []


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
