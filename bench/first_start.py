"""A first start, as after `make install` (issue 44): `ragchat serve` on a fresh data directory (its embedded
PostgreSQL made from nothing, every migration applied) with the embedding model prepared, timed from the
command to "ready at". Prints each run's seconds with the 1-minute load average (on a shared machine the
load says how much of the time was the machine's).

    python bench/first_start.py [--runs 3] [--prepare]   # --prepare: `ragchat prepare-models` first
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAGCHAT = [sys.executable, "-c", "import sys; from ragchat.cli import main; sys.exit(main(sys.argv[1:]))"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(data_dir: Path) -> dict[str, str]:
    drop = ("RAGCHAT_", "DATABASE_", "HOST", "PORT", "AUTH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "RAGCHAT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "OLLAMA_HOST": "http://127.0.0.1:9"}


def cpu_seconds(pid: int) -> float:
    """CPU time of the process and its children it has waited for (initdb, pg_ctl), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def first_start(timeout_s: float = 300) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="ragchat-first-start-") as tmp:
        port = free_port()
        started = time.monotonic()
        proc = subprocess.Popen(
            [*RAGCHAT, "serve", "--port", str(port)],
            env=env_for(Path(tmp) / "data"),
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        lines: list[str] = []
        try:
            for line in proc.stdout:
                lines.append(line.rstrip())
                if "ready at" in line:
                    return time.monotonic() - started, cpu_seconds(proc.pid)
                if time.monotonic() - started > timeout_s:
                    break
            raise RuntimeError("no 'ready at':\n" + "\n".join(lines))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--prepare", action="store_true", help="run `ragchat prepare-models` first (timed)")
    args = parser.parse_args()
    if args.prepare:
        started = time.monotonic()
        subprocess.run([*RAGCHAT, "prepare-models"], check=True, env=env_for(Path(tempfile.gettempdir())))
        print(f"prepare-models: {time.monotonic() - started:.1f} s (load {os.getloadavg()[0]:.1f})")
    times = []
    for run in range(1, args.runs + 1):
        load = os.getloadavg()[0]
        seconds, cpu = first_start()
        times.append(seconds)
        print(
            f"run {run}: ready in {seconds:.1f} s on a fresh data directory, {cpu:.1f} CPU-s in ragchat's process "
            f"(load {load:.1f} before)",
            flush=True,
        )
    print(f"median {statistics.median(times):.1f} s over {len(times)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
