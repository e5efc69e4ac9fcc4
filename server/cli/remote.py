"""Commands that talk to a running server over HTTP: `ragchat login`, `logout`, and `search` / `ingest` with
`--server URL`. They authenticate with a personal API token: `--token`, else `RAGCHAT_TOKEN`, else the one
`ragchat login` saved (in the user's config dir, readable only by them)."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import platformdirs

from server.core.errors import RagchatError, Unauthorized

TIMEOUT = httpx.Timeout(120.0, connect=10.0)


def credentials_path() -> Path:
    return Path(platformdirs.user_config_dir("ragchat", appauthor=False)) / "credentials.json"


def load_credentials() -> dict[str, str]:
    path = credentials_path()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_credentials(server: str, token: str, username: str) -> Path:
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"server": server, "token": token, "username": username}, f)
    return path


def server_url(args: argparse.Namespace) -> str | None:
    url = getattr(args, "server", None) or os.environ.get("RAGCHAT_SERVER")
    return url.rstrip("/") if url else None


def token_for(args: argparse.Namespace, server: str) -> str:
    token = getattr(args, "token", None) or os.environ.get("RAGCHAT_TOKEN")
    if token:
        return token
    saved = load_credentials()
    if saved.get("token") and saved.get("server", "").rstrip("/") == server:
        return saved["token"]
    raise Unauthorized(
        f"no API token for {server}: run `ragchat login --server {server}`, or pass --token / RAGCHAT_TOKEN"
    )


def client(server: str, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server, headers=headers, timeout=TIMEOUT)


def check(response: httpx.Response) -> Any:
    """The JSON body, or the server's error message as a RagchatError (exit code 2)."""
    if response.is_success:
        return response.json() if response.content else None
    try:
        detail = response.json().get("detail") or response.text
    except ValueError:
        detail = response.text
    err = Unauthorized(str(detail)) if response.status_code == 401 else RagchatError(str(detail))
    err.message = f"{response.status_code}: {detail}"
    raise err


def login(args: argparse.Namespace) -> int:
    server = server_url(args)
    if not server:
        raise RagchatError("which server? pass --server URL (or set RAGCHAT_SERVER)")
    username = args.username or input("username: ")
    password = os.environ.get("RAGCHAT_PASSWORD") or getpass.getpass("password: ")
    with client(server) as http:
        check(http.post("/api/auth/login", json={"username": username, "password": password}))
        name = f"ragchat CLI on {socket.gethostname()}"[:100]
        token = check(http.post("/api/auth/tokens", json={"name": name}))
        http.post("/api/auth/logout")
    path = save_credentials(server, token["token"], username)
    print(f"logged in to {server} as {username}; API token {token['prefix']}… saved in {path}")
    return 0


def logout(args: argparse.Namespace) -> int:
    saved = load_credentials()
    if not saved.get("token"):
        print("not logged in")
        return 0
    with client(saved["server"], saved["token"]) as http:
        tokens = check(http.get("/api/auth/tokens"))["tokens"]
        for t in tokens:
            if saved["token"].startswith(t["prefix"]) and t["name"].startswith("ragchat CLI"):
                http.delete(f"/api/auth/tokens/{t['id']}")
    credentials_path().unlink(missing_ok=True)
    print(f"logged out of {saved['server']} (token revoked)")
    return 0


def search(args: argparse.Namespace, server: str) -> dict[str, Any]:
    params: list[tuple[str, Any]] = [("q", args.query), ("limit", args.top_k)]
    if args.mode:
        params.append(("mode", args.mode))
    if args.rerank is not None:
        params.append(("rerank", str(args.rerank).lower()))
    params += [("document_ids", d) for d in args.document or []]
    params += [("collection_ids", c) for c in getattr(args, "collection", None) or []]
    params += [("filter", f) for f in args.filter or []]
    with client(server, token_for(args, server)) as http:
        return check(http.get("/api/search", params=params))


def ingest(args: argparse.Namespace, server: str) -> int:
    files = [p for path in args.paths for p in _walk(Path(path))]
    if not files:
        raise RagchatError("no files to upload")
    failed = 0
    with client(server, token_for(args, server)) as http:
        for path in files:
            with path.open("rb") as f:
                data = {"collection_id": args.collection[0]} if getattr(args, "collection", None) else None
                body = check(http.post("/api/documents", files={"files": (path.name, f)}, data=data))
            for r in body["results"]:
                failed += r["status"] == "rejected"
                print(f"{r['status']:<10} {r['filename']}" + (f"  ({r['error']})" if r.get("error") else ""))
    print(f"uploaded {len(files)} files to {server}; the server ingests them in the background", file=sys.stderr)
    return 1 if failed else 0


def _walk(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    return [path]


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", metavar="URL", help="talk to this running server (default: RAGCHAT_SERVER)")
    parser.add_argument("--token", help="personal API token (default: RAGCHAT_TOKEN, else `ragchat login`'s)")
    parser.add_argument("--collection", action="append", metavar="ID", help="a collection (search: repeatable)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("login", help="log in to a running server and save an API token for the CLI")
    lg.add_argument("--server", metavar="URL", help="e.g. http://127.0.0.1:8000 (default: RAGCHAT_SERVER)")
    lg.add_argument("--username", help="prompted for when omitted (the password always is, or RAGCHAT_PASSWORD)")
    lg.set_defaults(func=lambda _settings, args: login(args), needs_settings=False)
    lo = sub.add_parser("logout", help="revoke and forget the API token `ragchat login` saved")
    lo.set_defaults(func=lambda _settings, args: logout(args), needs_settings=False)
