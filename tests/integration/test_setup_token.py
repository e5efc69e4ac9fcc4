"""The setup token (issue 44): on a server that listens beyond loopback, creating the first admin needs the
token RAGCHAT_SETUP_TOKEN sets, or the one-time one `ragchat serve` makes and prints as a link; the first
stranger to reach a new server does not become its admin. A loopback-only server asks for none."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from ragchat.accounts.setup import SetupTokenRequired
from ragchat.runtime import Overrides, open_runtime
from ragchat.settings import Settings
from tests.conftest import free_port
from tests.support.accounts import PASSWORD

LINK = re.compile(r"http://[^/\s]+:(\d+)/\?setup_token=([A-Za-z0-9_-]+)")


def setup(url: str, token: str | None = None, username: str = "boss") -> httpx.Response:
    body: dict[str, Any] = {"username": username, "password": PASSWORD}
    if token is not None:
        body["setup_token"] = token
    return httpx.post(f"{url}/api/auth/setup", json=body, timeout=30)


def setup_required(url: str) -> bool:
    return bool(httpx.get(f"{url}/api/auth/session", timeout=30).json()["setup_required"])


def test_the_first_admin_needs_the_setup_token_when_others_can_reach_the_server(live_app: Any) -> None:
    server = live_app(auth="on", host="0.0.0.0", setup_token=SecretStr("the-token-in-env"))
    for token, says in ((None, "needs its setup token"), ("a-guess", "not the server's")):
        refused = setup(server.url, token)
        assert refused.status_code == 403, refused.text
        assert refused.json()["code"] == "setup_token_required" and says in refused.json()["detail"], refused.json()
    assert setup_required(server.url)  # nobody became the admin

    created = setup(server.url, "the-token-in-env")
    assert created.status_code == 201, created.text
    assert created.json()["user"]["is_admin"] is True
    again = setup(server.url, "the-token-in-env", username="second")
    assert again.status_code == 409 and again.json()["code"] == "setup_done", again.text
    late = setup(server.url, None, username="third")  # after the setup, without the token: done, not "forbidden"
    assert late.status_code == 409, late.text


def test_a_loopback_server_asks_for_no_setup_token(live_app: Any) -> None:
    server = live_app(auth="on", host="127.0.0.1")
    assert setup(server.url).status_code == 201


def _said(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the start-up said, wherever this process's logging sends it: one entry per notice. Printed (text
    mode) it is one stderr line; logged (JSON mode, which an earlier test in the same process may have left on)
    the message's token is masked like every logged credential, a handler an earlier test installed may print
    that masked line, and the link travels whole in the record's `url` field."""
    printed = [line for line in capsys.readouterr().err.splitlines() if "setup_token" in line]
    logged = [
        f"{r.getMessage()} {getattr(r, 'fields', {}).get('url') or ''}"
        for r in caplog.records
        if "setup_token" in r.getMessage()
    ]
    caplog.clear()
    return logged or printed


async def test_the_start_up_notice_carries_a_one_time_token(
    settings: Settings,
    pool: Any,
    embedder: Any,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO")
    exposed = settings.model_copy(update={"auth": "on", "host": "0.0.0.0", "port": 8123})
    async with open_runtime(exposed, Overrides(pool=pool, embedder=embedder)) as rt:
        await rt.startup_problems()
        notices = _said(capsys, caplog)
        assert len(notices) == 1, notices
        link = LINK.search(notices[0])
        assert link and link.group(1) == "8123", notices
        assert link.group(2) == rt.accounts.setup_token and len(link.group(2)) >= 20
        with pytest.raises(SetupTokenRequired, match="needs its setup token"):
            await rt.accounts.setup("boss", PASSWORD, ip="198.51.100.7", user_agent="test")
        await rt.accounts.setup("boss", PASSWORD, ip="198.51.100.7", user_agent="test", token=link.group(2))
        await rt.startup_problems()
        assert _said(capsys, caplog) == []  # said only while needed

    given = exposed.model_copy(update={"setup_token": SecretStr("set-by-hand")})
    async with open_runtime(given, Overrides(pool=pool, embedder=embedder)) as rt:
        assert rt.accounts.setup_token == "set-by-hand"
    loopback = settings.model_copy(update={"auth": "on", "host": "127.0.0.1"})
    async with open_runtime(loopback, Overrides(pool=pool, embedder=embedder)) as rt:
        assert rt.accounts.setup_token is None


def test_ragchat_serve_on_a_reachable_address_prints_the_setup_link(db: str, tmp_path: Path) -> None:
    """The real command: `ragchat serve --host 0.0.0.0` prints the link; the page's request needs its token."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("RAGCHAT_", "DATABASE_", "AUTH", "HOST", "PORT"))},
        "DATABASE_URL": db,
        "RAGCHAT_DATA_DIR": str(tmp_path / "data"),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "HF_HUB_OFFLINE": "1",
        "LOG_LEVEL": "warning",
        "INGEST_WORKERS": "0",
    }
    code = "import sys; from ragchat.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--host", "0.0.0.0", "--port", str(port)],
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

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 120
        while not ready.wait(0.1):
            assert proc.poll() is None, "ragchat serve exited:\n" + "\n".join(lines)
            assert time.monotonic() < deadline, "not ready within 120 s:\n" + "\n".join(lines)
        links = [m for line in lines if (m := LINK.search(line))]
        assert len(links) == 1, "\n".join(lines)
        assert links[0].group(1) == str(port)
        url = f"http://127.0.0.1:{port}"
        assert setup(url).status_code == 403 and setup_required(url)
        assert setup(url, links[0].group(2)).status_code == 201
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
