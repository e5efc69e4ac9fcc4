"""Helpers shared by the benches: repo path, a private runtime, percentiles, tables, JSON output.

Every bench runs against its own data directory (never the user's default one) and builds what it needs
through the composition root (`ragchat.runtime.open_runtime`), which stops the pgserver it started when
the bench is done.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from ragchat.providers.embeddings import build_embedder  # noqa: E402
from ragchat.providers.embeddings.base import EmbeddingProvider  # noqa: E402
from ragchat.providers.llm.base import LLMProvider  # noqa: E402
from ragchat.runtime import Overrides, Runtime, open_runtime  # noqa: E402
from ragchat.settings import Settings  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "scifact-dev"
RESULTS = ROOT / "bench" / "results"


def bench_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings that ignore `.env` and the environment's DATABASE_URL: a private embedded server in data_dir."""
    values: dict[str, Any] = {"llm_warmup": False, **overrides}  # a bench's LLM calls are the ones it measures
    return Settings(_env_file=None, data_dir=data_dir, database_url=None, **values)  # type: ignore[call-arg]


@asynccontextmanager
async def bench_runtime(
    settings: Settings, *, embedder: EmbeddingProvider | None = None, llm: LLMProvider | None = None
) -> AsyncIterator[Runtime]:
    """The runtime the server would build (embedded Postgres in settings.database.data_dir, migrations, pool, spaces,
    searcher, documents, chat), with `embedder` / `llm` used instead of the configured ones when given (the
    caller closes those). Everything the runtime opened is closed, and its pgserver stopped, on exit."""
    async with open_runtime(settings, Overrides(embedder=embedder, llm=llm)) as rt:
        yield rt


def load_embedder(settings: Settings) -> Any:
    """The configured embedding provider (`build_embedder`, as the runtime builds it), warmed up; the caller
    closes it (`await embedder.close()`). For the default provider this is `SentenceTransformerEmbedder`."""
    embedder = build_embedder(settings.embeddings, settings.llm)
    if hasattr(embedder, "embed_sync"):
        embedder.embed_sync(["warm up the model"])  # first call pays lazy initialisation
    return embedder


def postmaster_pid(rt: Runtime) -> int | None:
    """The pid of the embedded server the runtime started (None with an external DATABASE_URL)."""
    if rt.database is None or rt.database.embedded is None:
        return None
    return int(rt.database.embedded.server.get_pid())


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line))
                if limit is not None and len(out) >= limit:
                    break
    return out


def pct(values: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 (linear interpolation), mean and max, in the input's unit, rounded."""
    if not values:
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "p99_ms": float("nan")}
    arr = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(arr, [50, 95, 99])
    return {
        "p50_ms": round(float(p50), 2),
        "p95_ms": round(float(p95), 2),
        "p99_ms": round(float(p99), 2),
        "mean_ms": round(float(arr.mean()), 2),
        "max_ms": round(float(arr.max()), 2),
        "n": len(values),
    }


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> str:
    """A plain-text table (right-aligned numbers)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}"
        return str(v)

    body = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headers)]
    lines = []
    if title:
        lines.append(title)
    pairs = enumerate(zip(headers, widths, strict=True))
    lines.append("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in pairs))
    lines.append("  ".join("-" * w for w in widths))
    for r in body:
        lines.append("  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def cpu_context() -> dict[str, Any]:
    """What else was running: the load average and the busiest other processes (the machine has 2 cores)."""
    info: dict[str, Any] = {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    try:
        import psutil

        me = os.getpid()
        procs = []
        for p in psutil.process_iter(["pid", "name", "cmdline"]):
            if p.info["pid"] == me:
                continue
            try:
                procs.append((p.cpu_percent(interval=None), p))
            except psutil.Error:
                continue
        time.sleep(0.5)
        busy = []
        for _, p in procs:
            try:
                c = p.cpu_percent(interval=None)
            except psutil.Error:
                continue
            if c >= 20:
                busy.append({"pid": p.info["pid"], "cpu_percent": c, "cmd": " ".join(p.info["cmdline"] or [])[:100]})
        info["busy_processes"] = sorted(busy, key=lambda b: -b["cpu_percent"])[:5]
    except Exception:  # psutil missing or not permitted: the load average is enough
        pass
    return info


class Stopwatch:
    """Accumulates busy time per named stage (thread-safe enough for += on floats under the GIL)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.calls[name] = self.calls.get(name, 0) + 1
