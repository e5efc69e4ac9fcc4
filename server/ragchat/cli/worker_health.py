"""The worker's health for a container's health check: `ragchat worker` writes a heartbeat file every
HEARTBEAT_S seconds after a database round trip (`SELECT 1` through its pool), and `ragchat worker --check`
says whether a live worker wrote it in the last STALE_S seconds (exit 0) or not (exit 1, one line why).

A hung event loop, a lost database or a dead process all stop the beats, so the check can fail, unlike a
check that only asks whether process 1 exists. The file is per machine (container) and user: the temporary
directory, or `--heartbeat-file`."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

HEARTBEAT_S = 10.0
STALE_S = 60.0


def default_file() -> Path:
    return Path(tempfile.gettempdir()) / f"ragchat-worker-{os.getuid()}.alive"


async def beat(pool: Any, path: Path, stop: asyncio.Event, every_s: float = HEARTBEAT_S) -> None:
    """Until `stop`: a database round trip, then the file rewritten (pid and time), every `every_s` seconds."""
    while not stop.is_set():
        try:
            async with pool.connection(timeout=every_s) as conn:
                await conn.execute("SELECT 1")
            await asyncio.to_thread(_write, path, {"pid": os.getpid(), "at": time.time()})
        except Exception as exc:  # a missed beat is the signal; the worker itself goes on
            log.warning("worker heartbeat: the database did not answer (%s)", exc)
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
    await asyncio.to_thread(path.unlink, missing_ok=True)


def check(path: Path, stale_s: float = STALE_S) -> tuple[bool, str]:
    """(healthy, one line): a heartbeat younger than `stale_s` from a process that is alive."""
    try:
        info = json.loads(path.read_text())
        pid, at = int(info["pid"]), float(info["at"])
    except FileNotFoundError:
        return False, f"no worker heartbeat at {path}: the worker is not running (or not yet connected)"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return False, f"the worker heartbeat {path} is unreadable ({exc})"
    age = time.time() - at
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False, f"the worker (pid {pid}) that wrote {path} is gone"
    except PermissionError:
        pass  # alive, another user's
    if age > stale_s:
        why = "it is stuck or its database is unreachable"
        return False, f"the worker's last heartbeat is {age:.0f} s old (over {stale_s:.0f} s): {why}"
    return True, f"worker {pid} is alive: its last database round trip {age:.0f} s ago"


def _write(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(value))
    tmp.replace(path)
