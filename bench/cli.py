"""`ragchat search` from the terminal: through a running server versus a cold start on the database.

Starts `ragchat serve` (AUTH=off, on 127.0.0.1, its own data directory), ingests a few hundred SciFact
abstracts, then times the whole command (process start to exit) N times each way:

- **server**: `ragchat search Q --server URL` — a Python process, an HTTP request, a warm model in the server;
- **found**: `ragchat search Q` on the same data directory — the CLI finds the running server (server.json);
- **cold**: `ragchat search Q --local` — the CLI opens Postgres and loads the embedding model itself.

    .venv/bin/python bench/cli.py [--runs 7] [--docs 300] [--json bench/results/cli.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CORPUS = ROOT.parent / "shared" / "data" / "scifact-dev" / "corpus.jsonl"
QUERIES = ["how do vaccines induce immunity", "gene expression in tumour cells", "vitamin D and bone density"]


def cli(*args: str, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "ragchat.cli", *args], env=env, capture_output=True, text=True)
    return time.perf_counter() - start, out


def wait_health(url: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code in (200, 503):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the server did not start")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--docs", type=int, default=300)
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--json", type=Path, default=RESULTS / "cli.json")
    args = p.parse_args()
    load = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="ragchat-bench-cli-"))
    env = {
        **os.environ,
        "RAGCHAT_DATA_DIR": str(work / "data"),
        "AUTH": "off",
        "HF_HUB_OFFLINE": "1",
        "RATE_SEARCH_PER_MIN": "0",
    }
    env.pop("DATABASE_URL", None)
    corpus = work / "corpus.jsonl"
    with CORPUS.open() as src, corpus.open("w") as dst:
        for _, line in zip(range(args.docs), src, strict=False):
            dst.write(line)
    seconds, out = cli("ingest", str(corpus), "--local", "--quiet", env=env)
    print(f"ingested {args.docs} abstracts in {seconds:.1f} s", file=sys.stderr)

    url = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "ragchat.cli", "serve", "--port", str(args.port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows: dict[str, list[float]] = {"server": [], "found": [], "cold": []}
    try:
        wait_health(url)
        cli("search", "warm up", "--server", url, env=env)
        for i in range(args.runs):
            q = QUERIES[i % len(QUERIES)]
            for name, extra in (("server", ["--server", url]), ("found", []), ("cold", ["--local"])):
                seconds, out = cli("search", q, *extra, env=env)
                assert out.returncode == 0, out.stderr
                expect = "using the server" if name != "cold" else "using embedded"
                assert expect in out.stderr, (name, out.stderr)
                rows[name].append(seconds)
    finally:
        server.terminate()
        server.wait(timeout=30)
    cold = statistics.median(rows["cold"])
    table = [
        "| path | p50 s | min s | max s | vs cold |",
        "|---|---|---|---|---|",
        *(
            f"| {name} | {statistics.median(v):.2f} | {min(v):.2f} | {max(v):.2f} | "
            f"{statistics.median(v) / cold:.2f}× |"
            for name, v in rows.items()
        ),
    ]
    text = "\n".join(
        [
            f"`ragchat search` whole command, {args.runs} runs each, {args.docs} SciFact abstracts; "
            f"load average {load[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end, {os.cpu_count()} CPUs",
            *table,
        ]
    )
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"runs": rows, "docs": args.docs, "load_start": load, "load_end": os.getloadavg()}
    args.json.write_text(json.dumps(result, indent=2))
    args.json.with_suffix(".txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
