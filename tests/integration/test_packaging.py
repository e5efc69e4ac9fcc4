"""The wheel works outside the checkout: `pip wheel .`, installed into a fresh venv, `ragchat serve` from a temp
directory applies the bundled migrations to an empty database, answers /api/health and serves the built page.

The venv gets the wheel alone (`--no-deps`); a .pth line puts this interpreter's site-packages after its own for
the dependencies, without re-downloading them. That directory's own .pth files (the editable install of this
checkout among them) are not processed, so `server` can only come from the wheel, which the test checks.

With RAGCHAT_WHEEL_VENV=<venv> (`make test-wheel`: a real `pip install .` with all its dependencies) the same
tests run on that venv, and `ragchat serve` starts its own embedded Postgres in its temp data directory.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import sysconfig
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from tests.conftest import free_port
from tests.fakes.ollama_server import FakeOllama

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = sorted(p.name for p in (REPO_ROOT / "migrations").glob("[0-9][0-9][0-9][0-9]_*.sql"))


def run(args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return str(done.stdout)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that would point ragchat or Python back at this checkout."""
    drop = ("PYTHON", "VIRTUAL_ENV", "RAGCHAT_", "DATABASE_URL", "TEST_DATABASE_URL", "CLIENT_DIST", "AUTH", "PORT")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(drop)}
    return {**env, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **extra}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from this checkout installed; dependencies from this interpreter's."""
    if os.environ.get("RAGCHAT_WHEEL_VENV"):
        return Path(os.environ["RAGCHAT_WHEEL_VENV"]).resolve()
    if not (REPO_ROOT / "client" / "dist" / "index.html").is_file():
        pytest.fail("client/dist is missing: build the web client first (`make client`)")
    root = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--quiet"]
    run([*pip, "wheel", str(REPO_ROOT), "--no-deps", "-w", str(root / "dist")])
    (wheel,) = (root / "dist").glob("ragchat_server-*.whl")
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)])
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_ragchat_test_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    return venv


@pytest.fixture
def empty_database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """A new, empty database on the test server (the test database itself when we may not create one);
    None with RAGCHAT_WHEEL_VENV: `ragchat serve` starts its embedded Postgres, as for a user."""
    if os.environ.get("RAGCHAT_WHEEL_VENV"):
        yield None
        return
    pg_uri: str = request.getfixturevalue("pg_uri")
    name = f"ragchat_wheel_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.errors.InsufficientPrivilege:
        yield pg_uri
        return
    try:
        yield make_conninfo(pg_uri, dbname=name)
    finally:
        drop_database(pg_uri, name)


def drop_database(uri: str, name: str) -> None:
    """DROP DATABASE once the stopped server's sessions have ended (they end just after its process does)."""
    deadline = time.monotonic() + 15
    with psycopg.connect(uri, autocommit=True) as conn:
        while True:
            try:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
                return
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def test_the_wheel_imports_from_itself_and_carries_its_files(venv: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.util, ragchat, ragchat.resources as r; assert importlib.util.find_spec('server') is None; "
        "print(ragchat.__file__, r.migrations_dir(), r.client_dist(), sep='\\n')"
    )
    out = run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=clean_env())
    package, migrations, client = (Path(line) for line in out.splitlines())
    assert package.is_relative_to(venv), f"`ragchat` was imported from {package}, not from the installed wheel"
    assert migrations == package.parent / "_bundle" / "migrations"
    assert sorted(p.name for p in migrations.glob("*.sql")) == MIGRATIONS
    assert (client / "index.html").is_file() and client == package.parent / "_bundle" / "client"
    version = run([str(venv / "bin" / "ragchat"), "--version"], cwd=tmp_path, env=clean_env())
    assert re.fullmatch(r"ragchat \d+\.\d+\.\d+\S*\n", version), version


def test_ragchat_serve_from_the_wheel(
    venv: Path, empty_database: str | None, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    port = free_port()
    env = clean_env(
        **({"DATABASE_URL": empty_database} if empty_database else {}),
        RAGCHAT_DATA_DIR=str(tmp_path / "data"),
        HOST="127.0.0.1",
        PORT=str(port),
        OLLAMA_HOST=fake_ollama.url,
        LLM_TIMEOUT_S="5",
        LOG_LEVEL="warning",
    )
    proc = subprocess.Popen(
        [str(venv / "bin" / "ragchat"), "serve"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip())
            if "ready at" in line:
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 90
        while not ready.wait(0.1):
            assert proc.poll() is None, "ragchat serve exited:\n" + "\n".join(lines)
            assert time.monotonic() < deadline, "no 'ready at' within 90 s:\n" + "\n".join(lines)
        url = f"http://127.0.0.1:{port}"
        assert f"ragchat: ready at {url}" in lines, lines

        # "ready" means ready: the very first request is answered
        health = httpx.get(f"{url}/api/health", timeout=10)
        assert health.status_code == 200, health.text
        assert health.json()["database"] == "ok", health.json()
        page = httpx.get(f"{url}/", timeout=10)
        assert page.status_code == 200 and '<div id="root">' in page.text, page.text[:500]
        script = re.search(r'src="(/assets/[^"]+\.js)"', page.text)
        assert script, page.text
        assert httpx.get(f"{url}{script.group(1)}", timeout=10).status_code == 200

        if empty_database:  # (embedded Postgres: its "database ok" above already needed every migration)
            with psycopg.connect(empty_database) as conn:
                applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY version")]
            assert applied == MIGRATIONS
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("ragchat serve did not stop within 30 s of SIGTERM:\n" + "\n".join(lines)) from None
        reader.join(timeout=5)
    # uvicorn shuts down gracefully, then re-raises the signal it caught: killed by SIGTERM, after a clean stop
    assert code in (0, -signal.SIGTERM), f"exit code {code}:\n" + "\n".join(lines)
    assert not [line for line in lines if "Traceback" in line or line.startswith("ERROR")], "\n".join(lines)


def checkout_ragchat(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from ragchat.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900
    )


def test_prepare_models_exports_once_where_serve_looks(tmp_path: Path) -> None:
    """`ragchat prepare-models` (make install, the image build) makes the ONNX export in EMBED_CACHE_DIR; run
    again it only checks; `--check` says whether it is there. (The export itself: 30-90 s on two cores.)"""
    env = clean_env(EMBED_CACHE_DIR=str(tmp_path / "cache"), RAGCHAT_DATA_DIR=str(tmp_path / "data"))
    check = checkout_ragchat("prepare-models", "--check", env=env, cwd=tmp_path)
    assert check.returncode == 1 and "not prepared" in check.stderr, check
    made = checkout_ragchat("prepare-models", env=env, cwd=tmp_path)
    assert made.returncode == 0 and "prepared " in made.stdout, made
    (model,) = (tmp_path / "cache").glob("minilm-*-int8/model.onnx")
    again = checkout_ragchat("prepare-models", env=env, cwd=tmp_path)
    assert again.returncode == 0 and f"is prepared: {model}" in again.stdout, again
    assert checkout_ragchat("prepare-models", "--check", env=env, cwd=tmp_path).returncode == 0


def test_serve_uses_a_prepared_model_without_writing_to_its_cache(
    tmp_path: Path, empty_database: str | None, fake_ollama: FakeOllama
) -> None:
    """A prepared cache (an image's, made at build time by another user) is only read: no export, no lock file,
    so a read-only one works; the first start is the database and the model's load, not a conversion."""
    from ragchat.providers.embeddings import onnx_export
    from ragchat.providers.embeddings.base import bundled_model_path

    cache = tmp_path / "cache"
    prepared = onnx_export.cached_model(bundled_model_path())  # this machine's (made once, by the test suite too)
    folder = cache / prepared.parent.name
    folder.mkdir(parents=True)
    for name in ("model.onnx", "manifest.json"):
        (folder / name).write_bytes((prepared.parent / name).read_bytes())
    port = free_port()
    env = clean_env(
        **({"DATABASE_URL": empty_database} if empty_database else {}),
        EMBED_CACHE_DIR=str(cache),
        RAGCHAT_DATA_DIR=str(tmp_path / "data"),
        PORT=str(port),
        OLLAMA_HOST=fake_ollama.url,
        LOG_LEVEL="info",
    )
    code = "import sys; from ragchat.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        started = time.monotonic()
        for line in proc.stdout:
            lines.append(line.rstrip())
            if "ready at" in line or time.monotonic() - started > 180:
                break
        assert any("ready at" in line for line in lines), "\n".join(lines)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert not [line for line in lines if "exporting" in line or "unavailable" in line], "\n".join(lines)
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "model.onnx"]  # nothing written there
