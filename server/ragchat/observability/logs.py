"""Log lines: readable text by default, one JSON object a line with LOG_FORMAT=json.

Every line has a timestamp, level and logger; within a request also its id, user and route template, from a
context the access-log middleware opens (web/access_log.py) and authentication fills in (`bind`); with tracing
on, the trace and span ids (`trace_id`, `span_id`: OpenTelemetry's logging integration puts them on each
record, observability/tracing.py). Anything that looks like a credential (an API token, a bearer header, a password
field) is masked before it is written. Python warnings go through the same handler (`logging.captureWarnings`),
and what commands say to people (the ready banner, progress: `say`) is a JSON event line in JSON mode. A JSON
line stays one line whatever the message holds (newlines, NUL, U+2028).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

#: the current request's fields (one dict per request, filled in as it is known)
_context: ContextVar[dict[str, str] | None] = ContextVar("ragchat_log_context", default=None)
FIELDS = ("request_id", "user_id", "route")

_SECRETS = [
    (re.compile(r"\brc_[A-Za-z0-9_\-]{8,}"), "rc_***"),  # ragchat API tokens
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}"), r"\1 ***"),
    (
        re.compile(r"""(?i)(["']?(?:password|passwd|secret|api[_-]?key|token)["']?\s*[:=]\s*)(["']?)[^\s,"'}]+"""),
        r"\1\2***",
    ),
    (re.compile(r"(?i)(postgres(?:ql)?://[^:/\s]+:)[^@\s]+@"), r"\1***@"),
]


def open_context(**fields: str) -> dict[str, str]:
    """A new request's context (in the current task and the tasks it starts)."""
    values = dict(fields)
    _context.set(values)
    return values


def bind(**fields: str) -> None:
    """Add fields to the current request's context (e.g. the user, once authenticated)."""
    values = _context.get()
    if values is not None:
        values.update(fields)


def current_fields() -> dict[str, str]:
    """The current request's fields ({} outside a request)."""
    return _context.get() or {}


def redact(text: str) -> str:
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


class ContextFilter(logging.Filter):
    """Puts the request's fields on every record ("-" outside a request) and masks credentials."""

    def filter(self, record: logging.LogRecord) -> bool:
        values = _context.get() or {}
        for name in FIELDS:
            if not hasattr(record, name):
                setattr(record, name, values.get(name, "-"))
        message = record.getMessage()
        clean = redact(message)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        return True


#: characters `str.splitlines` (and many log shippers) break a line at that JSON leaves as they are
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})
#: the logger of what commands say to people (`say`); always at INFO, whatever LOG_LEVEL says
EVENTS = "ragchat.events"


class _State:
    format = "text"


_state = _State()


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in (*FIELDS, "status", "duration_ms", "method", "client", "event"):
            value = getattr(record, name, None)
            if value not in (None, "-"):
                entry[name] = value
        trace_id = getattr(record, "otelTraceID", "0")  # set by OpenTelemetry's logging integration
        if trace_id != "0":
            entry["trace_id"], entry["span_id"] = trace_id, getattr(record, "otelSpanID", "0")
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update({k: v for k, v in fields.items() if k not in entry})
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False, default=str).translate(_LINE_BREAKS)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s")

    def formatException(self, ei: Any) -> str:
        return redact(super().formatException(ei))


def configure_logging(level: str = "warning", fmt: str = "text", *, stream: Any = None) -> logging.Handler:
    """The root logger's one handler (replacing any), at `level`, in `fmt` ("text" or "json")."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(True)  # warnings.warn(...) → logger "py.warnings", through this handler
    logging.getLogger(EVENTS).setLevel(logging.INFO)
    _state.format = fmt
    return handler


def json_mode() -> bool:
    """LOG_FORMAT=json is on (configure_logging)."""
    return _state.format == "json"


def say(text: str, event: str, *, stream: Any = None, **fields: Any) -> None:
    """A line for people from a command (the ready banner, a progress line): printed as it is (to `stream`,
    default stdout) in text mode; in JSON mode one JSON line through the log handler: `event`, `message` and
    `fields`."""
    if _state.format == "json":
        logging.getLogger(EVENTS).info("%s", text, extra={"event": event, "fields": fields})
    else:
        print(text, file=stream or sys.stdout, flush=True)
