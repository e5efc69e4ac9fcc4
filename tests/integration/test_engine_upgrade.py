"""A data directory of the previous release (pgserver: PostgreSQL 16 + pgvector 0.6) opens with the embedded
PostgreSQL 18: every row and a fixed set of search results survive, the old directory is kept, a half-finished
upgrade is redone, and a directory of an unknown or newer version is refused with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragchat.db.embedded import start_embedded
from ragchat.db.upgrade import COMPLETE, NEW, EngineUpgradeError, major_version, upgrade_if_needed
from ragchat.runtime import open_runtime
from tests.fixtures.build_pg16_datadir import build, settings_for, snapshot


@pytest.mark.slow
async def test_pg16_directory_upgrades_with_everything_intact(tmp_path: Path) -> None:
    root = tmp_path / "data"
    before = await build(root)
    assert major_version(root / "pgdata") == 16
    assert before["counts"]["document_chunks"] > 5 and before["counts"]["chunk_embeddings"] > 5
    assert before["counts"]["api_tokens"] == 1 and before["counts"]["messages"] == 2 and before["counts"]["users"] >= 2
    assert all(before["searches"].values())

    # A kill -9 mid-upgrade leaves an unfinished new directory: it is thrown away and the upgrade redone.
    (root / NEW).mkdir()
    (root / NEW / "PG_VERSION").write_text("18\n")
    async with open_runtime(settings_for(root, None)) as runtime:
        assert runtime.database is not None and runtime.database.embedded is not None
        after = await snapshot(runtime)
    assert major_version(root / "pgdata") == 18
    assert major_version(root / "pgdata.pg16-backup") == 16  # the old directory, kept
    assert not (root / NEW).exists() and not (root / COMPLETE).exists() and not (root / "upgrade.dump").exists()
    assert after["counts"] == before["counts"]
    assert after["searches"] == before["searches"]

    # Started again: nothing more to do.
    assert upgrade_if_needed(root) is False


def test_newer_or_unknown_versions_are_refused_untouched(tmp_path: Path) -> None:
    for version, words in (("19", "newer than"), ("13", "cannot upgrade"), ("x", "not a PostgreSQL data directory")):
        root = tmp_path / version
        (root / "pgdata").mkdir(parents=True)
        (root / "pgdata" / "PG_VERSION").write_text(f"{version}\n")
        with pytest.raises(EngineUpgradeError, match=words):
            start_embedded(root)
        assert (root / "pgdata" / "PG_VERSION").read_text() == f"{version}\n"
        assert sorted(p.name for p in (root / "pgdata").iterdir()) == ["PG_VERSION"]
        assert not (root / NEW).exists()


def test_without_the_upgrade_extra_the_old_directory_is_refused_untouched(tmp_path: Path) -> None:
    """pgserver is an optional extra (issue 44, item 8): without it the start says how to get it."""
    import subprocess
    import sys

    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("16\n")
    code = (
        "import sys; sys.modules['pgserver'] = None  # not installed\n"
        "from pathlib import Path; from ragchat.db.embedded import start_embedded\n"
        "try:\n    start_embedded(Path(sys.argv[1]))\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert "EngineUpgradeError" in out.stdout and "ragchat-server[upgrade-pg16]" in out.stdout, out.stdout + out.stderr
    assert not (tmp_path / NEW).exists()
    assert sorted(p.name for p in pgdata.iterdir()) == ["PG_VERSION"]


def test_pgserver_is_not_a_runtime_dependency() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("pgserver") for d in project["dependencies"])
    assert project["optional-dependencies"]["upgrade-pg16"] == ["pgserver==0.1.4"]
