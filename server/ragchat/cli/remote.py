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

from ragchat.chat.engine.verify import footnotes
from ragchat.cli.common import id_arg
from ragchat.core.errors import RagchatError, Unauthorized
from ragchat.documents.metadata.fields import parse_meta_args

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


def server_file(data_dir: Path) -> Path:
    """Where `ragchat serve` says it is running, so commands on the same data directory can use it."""
    return data_dir / "server.json"


def announce(data_dir: Path, url: str, auth: str) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = server_file(data_dir)
    path.write_text(json.dumps({"url": url, "pid": os.getpid(), "auth": auth}))
    return path


def discover(data_dir: Path) -> dict[str, Any] | None:
    """The server `ragchat serve` announced for this data directory, if it is alive and answers."""
    try:
        info = json.loads(server_file(data_dir).read_text())
        os.kill(int(info["pid"]), 0)
        url = str(info["url"]).rstrip("/")
        if httpx.get(f"{url}/api/health", timeout=1.0).status_code in (200, 503):
            return {**info, "url": url}
    except (OSError, ValueError, KeyError, TypeError, httpx.HTTPError):
        return None
    return None


def server_url(args: argparse.Namespace, data_dir: Path | None = None) -> str | None:
    """--server, else RAGCHAT_SERVER, else a running server on the same data directory (unless --local).
    A found server with auth on is used only when there is a token for it."""
    url = getattr(args, "server", None) or os.environ.get("RAGCHAT_SERVER")
    if url:
        return url.rstrip("/")
    if data_dir is None or getattr(args, "local", False):
        return None
    info = discover(data_dir)
    if info is None:
        return None
    if info.get("auth") != "off":
        try:
            token_for(args, info["url"])
        except Unauthorized:
            print(
                f"ragchat: a server runs at {info['url']} but there is no API token for it "
                f"(`ragchat login --server {info['url']}`); working on the database directly",
                file=sys.stderr,
            )
            return None
    return info["url"]


def token_for(args: argparse.Namespace, server: str, *, required: bool = True) -> str | None:
    token = getattr(args, "token", None) or os.environ.get("RAGCHAT_TOKEN")
    if token:
        return token
    saved = load_credentials()
    if saved.get("token") and saved.get("server", "").rstrip("/") == server:
        return saved["token"]
    if not required:
        return None
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


def _token(args: argparse.Namespace, server: str) -> str | None:
    """Required unless the server runs with AUTH=off."""
    token = token_for(args, server, required=False)
    if token is None and check(httpx.get(f"{server}/api/auth/session", timeout=10)).get("auth") != "off":
        token_for(args, server)  # raises the "run ragchat login" message
    return token


def rag(args: argparse.Namespace, server: str, filters: dict[str, Any]) -> int:
    """`search --rag` through the server: the answer streamed as it is written, then numbered sources."""
    body = {"query": args.query, "top_k": args.top_k, "mode": args.mode, "rerank": args.rerank, "filters": filters}
    with client(server, _token(args, server)) as http:
        if args.json:
            print(json.dumps(check(http.post("/api/rag", json=body)), indent=2))
            return 0
        with http.stream("POST", "/api/rag", json={**body, "stream": True}) as response:
            if not response.is_success:
                response.read()
                check(response)
            event = ""
            sources: list[dict[str, Any]] = []
            verification: dict[str, Any] | None = None
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data = json.loads(line[5:])
                    if event == "token":
                        print(data["delta"], end="", flush=True)
                    elif event == "tool_result":
                        sources += data["chunks"]
                    elif event == "retry":
                        print(f"\n({data['message']})\n", flush=True)
                    elif event == "done":
                        verification = data.get("verification")
                    elif event == "error":
                        print(f"\nragchat: {data['message']}", file=sys.stderr)
                        return 2
    print_sources(sources)
    print_checks(verification)
    return 0


def print_checks(verification: dict[str, Any] | None) -> None:
    """The answer's verification under its sources, as the page shows it (chat/engine/verify.py footnotes)."""
    notes = footnotes(verification)
    if notes:
        print(f"\nChecks:\n{notes}")


def print_sources(sources: list[dict[str, Any]]) -> None:
    print("\n\nSources:" if sources else "\n\n(no passages found)")
    for n, s in enumerate(sources, 1):
        page = f", p. {s['page']}" if s.get("page") else ""
        print(f"  [{n}] {s['filename']}{page}  ({s['score']:.3f})")


def search(args: argparse.Namespace, server: str) -> dict[str, Any]:
    params: list[tuple[str, Any]] = [("q", args.query), ("limit", args.top_k)]
    if args.mode:
        params.append(("mode", args.mode))
    if args.rerank is not None:
        params.append(("rerank", str(args.rerank).lower()))
    params += [("document_ids", d) for d in args.document or []]
    params += [("collection_ids", c) for c in getattr(args, "collection", None) or []]
    params += [("filter", f) for f in args.filter or []]
    with client(server, _token(args, server)) as http:
        return check(http.get("/api/search", params=params))


def get_json(args: argparse.Namespace, server: str, path: str, params: list[tuple[str, Any]]) -> dict[str, Any]:
    """GET `path` on the server as the CLI's user; the API's error as the CLI's."""
    with client(server, _token(args, server)) as http:
        return check(http.get(path, params=params))


def is_url(arg: str) -> bool:
    """`ragchat ingest` fetches arguments that start with http:// or https://; the others are paths."""
    return arg.lower().startswith(("http://", "https://"))


def ingest(args: argparse.Namespace, server: str) -> int:
    urls = [p for p in args.paths if is_url(p)]
    files = [p for path in args.paths if not is_url(path) for p in _walk(Path(path))]
    if not files and not urls:
        raise RagchatError("no files to upload")
    collection = args.collection[0] if getattr(args, "collection", None) else None
    meta = json.dumps(parse_meta_args(args.meta)) if getattr(args, "meta", None) else None
    results: list[dict[str, Any]] = []
    with client(server, _token(args, server)) as http:
        for path in files:
            with path.open("rb") as f:
                fields = (
                    ("collection_id", collection),
                    ("metadata", meta),
                    ("chunk_strategy", getattr(args, "chunk", None)),
                    ("chunk_tokens", str(args.chunk_tokens) if getattr(args, "chunk_tokens", None) else None),
                )
                data = {k: v for k, v in fields if v} or None
                results += _show(check(http.post("/api/documents", files={"files": (path.name, f)}, data=data)))
        for url in urls:  # the server fetches the page (its SSRF guard and limits apply)
            response = http.post("/api/documents/url", json={"url": url, "collection_id": collection})
            try:
                results += _show(check(response))
            except Unauthorized:
                raise
            except RagchatError as exc:
                results += _show({"results": [{"status": "rejected", "filename": url, "error": exc.message}]})
    sent = ", ".join(f"{n} {what}" for n, what in ((len(files), "files"), (len(urls), "URLs")) if n)
    print(f"sent {sent} to {server}; the server ingests them in the background", file=sys.stderr)
    return 1 if any(r["status"] == "rejected" for r in results) else 0


def _show(body: dict[str, Any]) -> list[dict[str, Any]]:
    for r in body["results"]:
        print(f"{r['status']:<10} {r['filename']}" + (f"  ({r['error']})" if r.get("error") else ""))
    return body["results"]


def _walk(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    return [path]


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", metavar="URL", help="talk to this running server (default: RAGCHAT_SERVER)")
    parser.add_argument("--token", help="personal API token (default: RAGCHAT_TOKEN, else `ragchat login`'s)")
    parser.add_argument(
        "--collection",
        action="append",
        metavar="ID",
        type=id_arg("collection"),
        help="a collection (search: repeatable)",
    )
    parser.add_argument("--local", action="store_true", help="work on the database directly, even if a server runs")


def add_commands(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("login", help="log in to a running server and save an API token for the CLI")
    lg.add_argument("--server", metavar="URL", help="e.g. http://127.0.0.1:8000 (default: RAGCHAT_SERVER)")
    lg.add_argument("--username", help="prompted for when omitted (the password always is, or RAGCHAT_PASSWORD)")
    lg.set_defaults(func=lambda _settings, args: login(args), needs_settings=False)
    lo = sub.add_parser("logout", help="revoke and forget the API token `ragchat login` saved")
    lo.set_defaults(func=lambda _settings, args: logout(args), needs_settings=False)
