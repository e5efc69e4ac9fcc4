"""The kernel holds contracts only (issue 45, item 3): `ragchat.core` imports no web framework, an import-linter
`forbidden` contract in pyproject.toml. The contract is not blind: a Litestar import planted in a copy of the
kernel breaks it (and only it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = "The kernel holds contracts only: no web framework"


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the copy's `ragchat`, ahead of the installed one
    return subprocess.run([exe, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_litestar_import_planted_in_the_kernel_breaks_its_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "server" / "ragchat", tmp_path / "ragchat", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "ragchat" / "core" / "planted.py").write_text("from litestar import Request\n\nR = Request\n")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout
    assert f"{CONTRACT} BROKEN" in done.stdout, done.stdout + done.stderr
    assert "ragchat.core.planted -> litestar" in done.stdout, done.stdout
