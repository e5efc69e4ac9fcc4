"""Parsing in a child process: images, PDFs and big files are parsed (and OCR'd) in a process of their own,
forked from a server process that imported the parsers once (multiprocessing's `forkserver`: no threads of
the worker are copied; like `spawn`, a child imports the parent's `__main__` module, so a script that ingests
must keep its work under `if __name__ == "__main__"`: `ragchat` and `python -m ragchat.cli` do). The worker
watches it: a cancel kills it within INGEST_CANCEL_POLL_S, a parse that outlives its limits is killed, and
whatever memory decoding took goes back to the system when it exits (a thread's malloc arenas keep their
peak). Progress lines ("OCR page 3 of 12") come back over the pipe, and so do the pixels counted for OCR as
each page is about to be decoded (a killed child's pages still count against the owner's daily budget).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import resource
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument
from ragchat.documents.parsing.limits import Cancelled, OcrMeter, ParseError, ParseLimits

#: imported once in the fork server, so each child starts with them (the OCR engine's models load per child)
_PRELOAD = ["ragchat.documents.parsing.parsers", "ragchat.documents.parsing.ocr", "PIL.Image", "pypdf", "numpy"]
_context: Any = None


def _mp() -> Any:
    global _context
    if _context is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        _context = ctx
    return _context


@dataclass(frozen=True)
class ChildParse:
    """A parse done in a child: the document, the pixels it decoded for OCR and the child's peak RSS."""

    document: ParsedDocument
    ocr_pixels: int
    peak_rss_mb: float


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _child(conn: Connection, data: bytes, filename: str, limits: ParseLimits) -> None:
    """The child's whole life: parse, send ("done", document, pixels, peak) or ("error", kind, message, peak)."""
    from ragchat.documents.parsing.parsers import parse

    meter = OcrMeter(limits, on_spend=lambda pixels: conn.send(("pixels", pixels)))
    try:
        document = parse(data, filename, limits, lambda text: conn.send(("note", text)), meter)
        conn.send(("done", document, meter.pixels, _peak_mb()))
    except ParseError as exc:
        conn.send(("error", "parse", str(exc), _peak_mb()))
    except Exception as exc:  # a parser bug fails the document, with what it was
        conn.send(("error", "bug", f"{type(exc).__name__}: {exc}", _peak_mb()))
    finally:
        conn.close()


def _hard_limit_s(limits: ParseLimits) -> float:
    """When the worker kills a child that did not finish on its own: its parse and OCR budgets, and a minute."""
    return limits.parse_timeout_s + limits.ocr_time_budget_s + 60.0


async def parse_in_child(
    data: bytes,
    filename: str,
    limits: ParseLimits,
    *,
    on_note: Callable[[str], None],
    wanted: Callable[[], Awaitable[bool]],
    poll_s: float = 1.0,
    on_pixels: Callable[[int], None] | None = None,
) -> ChildParse:
    """Parse `data` in a child process. Every `poll_s` seconds `wanted()` is asked: False (cancelled, deleted,
    taken over) kills the child and raises Cancelled. Raises ParseError for a file that cannot be read, a child
    that died (out of memory?) or one that outlived its limits. `on_pixels` hears the running total of pixels
    counted for OCR (whatever the outcome, that much was decoded)."""
    parent, child_end = _mp().Pipe(duplex=False)
    process = _mp().Process(target=_child, args=(child_end, data, filename, limits), daemon=True)
    await asyncio.to_thread(process.start)
    child_end.close()
    loop = asyncio.get_running_loop()
    readable = asyncio.Event()
    loop.add_reader(parent.fileno(), readable.set)
    end = time.monotonic() + _hard_limit_s(limits)
    try:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(readable.wait(), poll_s)
            readable.clear()
            while parent.poll():
                try:
                    message = await asyncio.to_thread(parent.recv)
                except EOFError:  # the child exited without a word: killed (out of memory?) or crashed
                    code = await _reap(process)
                    raise ParseError(
                        f"the parser process stopped (exit code {code}) before it finished; "
                        "the file may need more memory than the server has"
                    ) from None
                if message[0] == "note":
                    on_note(message[1])
                elif message[0] == "pixels":
                    if on_pixels is not None:
                        on_pixels(message[1])
                elif message[0] == "done":
                    return ChildParse(message[1], message[2], message[3])
                else:
                    _, kind, text, _peak = message
                    raise ParseError(text if kind == "parse" else f"could not read {filename}: {text}")
            if not await wanted():
                raise Cancelled("cancelled")
            if time.monotonic() > end:
                raise ParseError(
                    f"parsing did not finish within {_hard_limit_s(limits):g} s "
                    "(PARSE_TIMEOUT_S + OCR_TIME_BUDGET_S + 60 s) and was stopped"
                )
    finally:
        loop.remove_reader(parent.fileno())
        if process.is_alive():
            process.kill()
        await _reap(process)
        parent.close()


async def _reap(process: Any) -> int | None:
    await asyncio.to_thread(process.join, 5)
    return process.exitcode
