"""Fair, bounded ingestion (issue 43, items 6 and 7): one user's big multi-page TIFF and another user's
40-byte text file uploaded a second later, through the HTTP API of a real `ragchat serve` (the composition
root, its embedded Postgres and its in-process worker, INGEST_WORKERS=1), in a private data directory.

Measured:
- the small file's time from upload to `ready` (goal < 30 s) while the TIFF is being read by OCR;
- the TIFF's cancel (once OCR reached `--cancel-at-page`, or `--page-within-s` after its upload): seconds
  until the child process reading it is gone, and until the worker slot it held is free (the same user's next
  scan, a one-page PNG queued behind it because of INGEST_HEAVY_PER_USER=1, is taken up) (goal < 10 s);
- peak RSS of the process that decoded the TIFF (the parse child: psutil on its pid, sampled every 50 ms),
  of the fork server and of the server process, and the server's RSS after the cancel (what it gives back);
- the progress notes the child sent ("OCR page n of m"), as the document API showed them;
- os.getloadavg() at start and end (the machine has 2 cores shared with other work).

The TIFF: `--pages` bilevel Group 4 pages of `--megapixels` each, with lines of drawn text (the issue's
reproduction: 300 pages of 36 MP, 23.5 MB). Drawing and compressing a 36 MP page takes ~2 s here, so
`--distinct` pages are drawn and their compressed strips repeated (each page has its own IFD and its own
copy of the bytes: the file is as big as a real one and every page is decoded).

    .venv/bin/python bench/ingest_fairness.py [--pages 300] [--megapixels 36] [--distinct 6]
        [--cancel-at-page 3] [--json bench/results/ingest_fairness.json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/ingest_fairness.py` finds bench/

import httpx
import psutil
from PIL import Image, ImageDraw

from bench.common import RESULTS, ROOT, cpu_context, write_json
from tests.support import scans

PASSWORD = "correct horse battery"
SMALL = b"Bea's note: the ferry leaves at nine.\n.."  # 40 bytes
assert len(SMALL) == 40


# ---- the files ----------------------------------------------------------------------------------------------
def text_tiff(pages: int, megapixels: float, distinct: int) -> bytes:
    """A multi-page bilevel TIFF: `pages` square pages of `megapixels` each with ~30 lines of text, the text of
    `distinct` drawn pages repeated (every page has its own IFD and its own copy of its strip)."""
    side = int((megapixels * 1e6) ** 0.5)
    size = max(24, side // 70)
    face, step = scans.font(size), int(size * 1.9)
    strips = []
    for number in range(1, min(distinct, pages) + 1):
        page = Image.new("1", (side, side), 1)
        draw = ImageDraw.Draw(page)
        for i in range(min(30, (side - 2 * size) // step)):
            line = f"Harbour ledger page {number}, entry {i + 1}: forty crates of salt cod for the northern quay"
            draw.text((size * 3, size * 2 + i * step), line, font=face, fill=0)
        strips.append(scans.group4_strip(page))
    return scans.group4_tiff(strips, side, side, pages)


def one_page_png() -> bytes:
    page = scans.text_page(["The same user's next scan: one page, two lines.", "It waits for the slot."], size=28)
    return scans.encoded(page, "PNG")


# ---- the server and what it runs ------------------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`ragchat serve` (the console script an operator runs) on its own embedded Postgres in `data_dir`."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_READ_URL")}
    env |= {
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "RAGCHAT_DATA_DIR": str(data_dir),
        "AUTH": "on",
        "INGEST_WORKERS": "1",
        "LOG_LEVEL": "warning",
        "RATE_LOGIN_PER_MIN": "0",
        "OLLAMA_HOST": "http://127.0.0.1:9",  # no LLM is asked anything here
    }
    script = Path(sys.executable).parent / "ragchat"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "ragchat.cli"]
    handle = log.open("ab")
    return subprocess.Popen(
        [*command, "serve", "--port", str(port)], env=env, stdout=handle, stderr=handle, cwd=data_dir
    )


def stop_server(proc: subprocess.Popen[Any]) -> float:
    """SIGTERM, then wait; returns the seconds the shutdown took (killed after 60 s)."""
    started = time.monotonic()
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return time.monotonic() - started


async def wait_ready(base: str, proc: subprocess.Popen[Any], seconds: float = 600) -> float:
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        while time.monotonic() - started < seconds:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}")
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.5)
    raise RuntimeError(f"{base} did not become ready in {seconds:g} s")


@dataclass
class Sampler:
    """RSS of the server, its multiprocessing fork server and the parse children, every `step_s` (a thread)."""

    server_pid: int
    step_s: float = 0.05
    peaks: dict[int, float] = field(default_factory=dict)  # pid -> peak RSS (MB)
    kinds: dict[int, str] = field(default_factory=dict)  # pid -> server | forkserver | parse child
    first_seen: dict[int, float] = field(default_factory=dict)
    last_seen: dict[int, float] = field(default_factory=dict)
    server_now: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)

    def children_now(self) -> list[int]:
        """The parse children seen so far that are alive now."""
        return [p for p, k in list(self.kinds.items()) if k == "parse child" and _alive(p)]

    def _one(self) -> None:
        server = psutil.Process(self.server_pid)
        procs = [(server, "server")]
        for child in server.children(recursive=True):
            try:
                cmd = " ".join(child.cmdline())
                parent = child.parent()
                parent_cmd = " ".join(parent.cmdline()) if parent else ""
            except psutil.Error:
                continue
            if "forkserver" in parent_cmd:  # forked from the fork server (whose command line it inherits)
                procs.append((child, "parse child"))
            elif "forkserver" in cmd:
                procs.append((child, "forkserver"))
        now = time.monotonic()
        for proc, kind in procs:
            try:
                rss = proc.memory_info().rss / 2**20
            except psutil.Error:
                continue
            self.kinds[proc.pid] = kind
            self.peaks[proc.pid] = max(self.peaks.get(proc.pid, 0.0), rss)
            self.first_seen.setdefault(proc.pid, now)
            self.last_seen[proc.pid] = now
            if kind == "server":
                self.server_now = rss

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._one()
            except psutil.Error:
                pass
            self.stop.wait(self.step_s)

    def peak(self, kind: str) -> float:
        return max((mb for pid, mb in self.peaks.items() if self.kinds[pid] == kind), default=0.0)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ---- the run --------------------------------------------------------------------------------------------------
async def check(response: httpx.Response, status: int = 200) -> Any:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path}: {response.status_code} {response.text}"
        )
    return response.json()


async def until(check_: Callable[[], Awaitable[bool]], within_s: float, step_s: float = 0.1) -> float | None:
    """Seconds until `check_()` held (asked every `step_s`), or None if it did not within `within_s`."""
    started = time.monotonic()
    while time.monotonic() - started <= within_s:
        if await check_():
            return time.monotonic() - started
        await asyncio.sleep(step_s)
    return None


async def upload(client: httpx.AsyncClient, name: str, data: bytes) -> str:
    body = await check(
        await client.post("/api/documents", files=[("files", (name, data, "application/octet-stream"))]), 201
    )
    return str(body["results"][0]["document"]["id"])


async def document(client: httpx.AsyncClient, doc_id: str) -> dict[str, Any]:
    return await check(await client.get(f"/api/documents/{doc_id}"))


async def measure(base: str, sampler: Sampler, tiff: bytes, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with (
        httpx.AsyncClient(base_url=base, timeout=120) as ann,
        httpx.AsyncClient(base_url=base, timeout=120) as bea,
    ):
        await check(await ann.post("/api/auth/setup", json={"username": "ann", "password": PASSWORD}), 201)
        await check(await ann.post("/api/admin/users", json={"username": "bea", "password": PASSWORD}), 201)
        await check(await bea.post("/api/auth/login", json={"username": "bea", "password": PASSWORD}))
        await asyncio.sleep(2.0)
        out["server_rss_before_mb"] = round(sampler.server_now, 1)

        started = time.monotonic()
        scan_id = await upload(ann, "ledger.tif", tiff)
        out["tiff_upload_s"] = round(time.monotonic() - started, 2)
        await asyncio.sleep(1.0)  # the other user's file comes a second later
        small_at = time.monotonic()
        small_id = await upload(bea, "note.txt", SMALL)
        notes: list[str] = []

        async def small_ready() -> bool:
            scan = await document(ann, scan_id)
            if scan.get("progress_note") and scan["progress_note"] not in notes:
                notes.append(scan["progress_note"])
            status = (await document(bea, small_id))["status"]
            if status == "failed":
                raise RuntimeError("the small file failed")
            return status == "ready"

        waited = await until(small_ready, args.small_within_s, 0.1)
        out["small_ready_s"] = None if waited is None else round(time.monotonic() - small_at, 2)
        out["tiff_status_when_small_ready"] = (await document(ann, scan_id))["stage"]
        out["server_rss_small_ready_mb"] = round(sampler.server_now, 1)  # the embedding model is loaded by now
        print(
            f"small file ready after {out['small_ready_s']} s; the TIFF is {out['tiff_status_when_small_ready']}",
            flush=True,
        )

        next_id = await upload(ann, "next-scan.png", one_page_png())  # waits for ann's heavy slot

        async def at_page() -> bool:
            scan = await document(ann, scan_id)
            note = scan.get("progress_note") or ""
            if note and note not in notes:
                notes.append(note)
            if scan["status"] != "processing":
                raise RuntimeError(f"the TIFF is {scan['status']} before the cancel: {scan.get('error')}")
            return note.startswith(f"OCR page {args.cancel_at_page} ")

        await until(at_page, max(args.page_within_s - (time.monotonic() - started), 0.0), 0.2)
        pages = [int(n.split()[2]) for n in notes if n.startswith("OCR page ")]
        out["tiff_pages_before_cancel"] = max(pages, default=0)  # the page being read when it was cancelled
        out["tiff_seconds_before_cancel"] = round(time.monotonic() - started, 1)
        children = sampler.children_now()
        out["parse_children_before_cancel"] = len(children)
        next_before = (await document(ann, next_id))["status"]
        out["next_scan_status_before_cancel"] = next_before

        cancel_at = time.monotonic()
        body = await check(await ann.post(f"/api/documents/{scan_id}/cancel"))
        out["cancel_request_s"] = round(time.monotonic() - cancel_at, 3)
        out["cancel_status"] = f"{body['status']} ({body.get('error')})"

        async def child_gone() -> bool:
            return not any(_alive(p) for p in children)

        gone = await until(child_gone, 30, 0.05) if children else None
        out["child_gone_after_cancel_s"] = None if gone is None else round(gone, 2)

        async def next_taken() -> bool:
            return (await document(ann, next_id))["status"] != "queued"

        freed = await until(next_taken, 30, 0.05)
        out["slot_freed_after_cancel_s"] = None if freed is None else round(time.monotonic() - cancel_at, 2)

        async def next_done() -> bool:
            return (await document(ann, next_id))["status"] in ("ready", "failed")

        await until(next_done, args.next_within_s, 0.2)
        nxt = await document(ann, next_id)
        out["next_scan_status"] = nxt["status"] if nxt["status"] != "failed" else f"failed: {nxt.get('error')}"
        await asyncio.sleep(3.0)  # what the server holds once the child is gone
        out["server_rss_after_mb"] = round(sampler.server_now, 1)
        scan = await document(ann, scan_id)
        chunks = (await check(await ann.get(f"/api/documents/{scan_id}/chunks")))["chunks"]
        out["tiff_final"] = f"{scan['status']} ({scan.get('error')}), {len(chunks)} chunks"
        out["progress_notes_seen"] = notes
    return out


def report(result: dict[str, Any]) -> str:
    m, rss, tiff = result["measured"], result["rss_mb"], result["tiff"]
    notes = m["progress_notes_seen"]
    load = " → ".join("/".join(f"{x:.1f}" for x in result[k]) for k in ("loadavg_start", "loadavg_end"))
    server = (m["server_rss_before_mb"], m["server_rss_small_ready_mb"], rss["server_peak"], m["server_rss_after_mb"])
    server_rss = " / ".join(f"{v:.0f}" for v in server)
    before_cancel = f"page {m['tiff_pages_before_cancel']} ({m['tiff_seconds_before_cancel']} s after its upload)"
    rows = [
        ("the TIFF (user A)", f"{tiff['pages']} pages × {tiff['megapixels']:g} MP, {tiff['mb']:.1f} MB", ""),
        ("40-byte text file (user B, 1 s later): upload → ready", f"{m['small_ready_s']} s", "< 30 s"),
        ("the TIFF's stage when it was ready", m["tiff_status_when_small_ready"], "reading"),
        ("the TIFF's OCR when it was cancelled", before_cancel, ""),
        ("cancel request", f"{m['cancel_request_s'] * 1000:.0f} ms → {m['cancel_status']}", ""),
        ("cancel answered → the parse child gone", f"{m['child_gone_after_cancel_s']} s", "< 10 s"),
        ("cancel sent → worker slot free (A's next scan taken up)", f"{m['slot_freed_after_cancel_s']} s", "< 10 s"),
        ("A's next scan (1-page PNG)", m["next_scan_status"], "ready"),
        ("the TIFF after the cancel", m["tiff_final"], "0 chunks"),
        ("peak RSS of the parse child (decoded the TIFF)", f"{rss['parse_child_peak']:.0f} MB", "reported"),
        ("peak RSS of the fork server", f"{rss['forkserver_peak']:.0f} MB", ""),
        ("server RSS: idle / small file ready (model loaded) / peak / 3 s after the cancel", f"{server_rss} MB", ""),
        ("progress notes seen", ", ".join(notes[:3]) + (" …" if len(notes) > 3 else ""), ""),
        ("load average (1/5/15 min) start → end", load, ""),
    ]
    lines = ["| measure | value | goal |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    tiff = text_tiff(args.pages, args.megapixels, args.distinct)
    built = time.monotonic() - started
    print(f"TIFF: {args.pages} pages of {args.megapixels:g} MP, {len(tiff) / 1e6:.1f} MB, built in {built:.1f} s")
    root = Path(tempfile.mkdtemp(prefix="ragchat-fairness-"))
    log = root / "server.log"
    port = free_port()
    load_start = [round(x, 2) for x in os.getloadavg()]
    context_start = cpu_context()
    (root / "data").mkdir()
    proc = start_server(root / "data", port, log)
    sampler = Sampler(proc.pid)
    thread = threading.Thread(target=sampler.run, daemon=True)
    result: dict[str, Any] = {
        "bench": "ingest_fairness",
        "tiff": {"pages": args.pages, "megapixels": args.megapixels, "distinct": args.distinct, "mb": len(tiff) / 1e6},
        "settings": "INGEST_WORKERS=1, the defaults otherwise (INGEST_HEAVY_SLOTS=2, INGEST_HEAVY_PER_USER=1, "
        "INGEST_CANCEL_POLL_S=1.0, OCR_MAX_PAGES=100, OCR_MAX_MEGAPIXELS=1000)",
        "loadavg_start": load_start,
        "cpu_context_start": context_start,
    }  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        result["server_start_s"] = round(await wait_ready(base, proc), 1)
        thread.start()
        result["measured"] = await measure(base, sampler, tiff, args)
    finally:
        sampler.stop.set()
        result["server_stop_s"] = round(stop_server(proc), 1)
        result["server_exit_code"] = proc.returncode
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    result["rss_mb"] = {
        "parse_child_peak": round(sampler.peak("parse child"), 1),
        "forkserver_peak": round(sampler.peak("forkserver"), 1),
        "server_peak": round(sampler.peak("server"), 1),
        "parse_children_seen": sum(1 for k in sampler.kinds.values() if k == "parse child"),
    }
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    result["cpu_context_end"] = cpu_context()
    result["wall_s"] = round(time.monotonic() - started, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--megapixels", type=float, default=36.0)
    parser.add_argument("--distinct", type=int, default=6, help="pages drawn (the rest repeat their text)")
    parser.add_argument("--cancel-at-page", type=int, default=3, help="cancel once OCR reached this page")
    parser.add_argument("--small-within-s", type=float, default=120.0)
    parser.add_argument("--page-within-s", type=float, default=150.0, help="or cancel after this long")
    parser.add_argument("--next-within-s", type=float, default=90.0)
    parser.add_argument("--json", type=Path, default=RESULTS / "ingest_fairness.json")
    parser.add_argument("--keep", action="store_true", help="keep the data directory and the server log")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(report(result))
    write_json(args.json, result)
    print(f"wrote {args.json.relative_to(ROOT) if args.json.is_relative_to(ROOT) else args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
