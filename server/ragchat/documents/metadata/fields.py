"""Document metadata people set (at upload, `ragchat ingest --meta`, PATCH) and the extractor's merge rule.

A value is a string or a list of strings. The keys the server writes (`RESERVED_KEYS`: where a document came
from) cannot be set or removed by people. The extractor's keys (`EXTRACTED_KEYS`) are merged into the same
object, never over a key a person set: a key whose value still equals what the extractor last wrote (kept in
`documents.metadata_extracted`) is the extractor's and a re-run replaces it; any other key is the person's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ragchat.core.errors import BadRequest

MAX_KEYS = 50
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 500
MAX_VALUES = 20  # per key
MAX_FIELD_BYTES = 64 * 1024  # the upload's `metadata` form field, as JSON
RESERVED_KEYS = frozenset({"source_path", "source_id", "source_url", "fetched_at"})
EXTRACTED_KEYS = ("title", "summary", "topics", "document_type", "language", "key_dates")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

MetadataValue = str | list[str]


def _value(key: str, raw: Any) -> MetadataValue:
    values = raw if isinstance(raw, list) else [raw]
    if not values or len(values) > MAX_VALUES:
        raise BadRequest(f"metadata {key!r}: 1 to {MAX_VALUES} values")
    out: list[str] = []
    for item in values:
        if not isinstance(item, str):
            raise BadRequest(f"metadata {key!r}: values are strings or lists of strings (got {type(item).__name__})")
        text = item.strip()
        if not text or len(text) > MAX_VALUE_CHARS or "\x00" in text:
            raise BadRequest(f"metadata {key!r}: a value is 1 to {MAX_VALUE_CHARS} characters, no NUL")
        if text not in out:
            out.append(text)
    return out if isinstance(raw, list) else out[0]


def _key(raw: Any) -> str:
    key = str(raw).strip()
    if not key or len(key) > MAX_KEY_CHARS or "=" in key or _CONTROL.search(key):
        raise BadRequest(f"metadata key {key[:80]!r}: 1 to {MAX_KEY_CHARS} characters, no '=' or control characters")
    if key in RESERVED_KEYS:
        raise BadRequest(f"metadata key {key!r} is set by the server (reserved: {', '.join(sorted(RESERVED_KEYS))})")
    return key


def check_metadata(raw: Any, *, allow_null: bool = False) -> dict[str, MetadataValue | None]:
    """A person's metadata checked: an object of at most MAX_KEYS keys, each a string or a list of strings
    (trimmed, repeats dropped); `allow_null` (a PATCH) lets null remove a key. A 400 names what is wrong."""
    if not isinstance(raw, Mapping):
        raise BadRequest('metadata is a JSON object of strings or lists of strings, e.g. {"subject": ["Polity"]}')
    if len(raw) > MAX_KEYS:
        raise BadRequest(f"metadata has {len(raw)} keys: at most {MAX_KEYS}")
    out: dict[str, MetadataValue | None] = {}
    for raw_key, raw_value in raw.items():
        key = _key(raw_key)
        out[key] = None if raw_value is None and allow_null else _value(key, raw_value)
    return out


def parse_metadata_field(text: str | None) -> dict[str, MetadataValue]:
    """The upload's multipart `metadata` field: a JSON object (empty or missing: none)."""
    if text is None or not text.strip():
        return {}
    if len(text.encode()) > MAX_FIELD_BYTES:
        raise BadRequest(f"the metadata field is over {MAX_FIELD_BYTES // 1024} KB")
    try:
        raw = json.loads(text)
    except ValueError:
        raise BadRequest('the metadata field is not JSON: send an object like {"subject": "Polity"}') from None
    return {k: v for k, v in check_metadata(raw).items() if v is not None}


def parse_meta_args(items: list[str] | None) -> dict[str, MetadataValue]:
    """`--meta subject=Polity --meta subject=History --meta year=2024` → `{"subject": ["Polity", "History"],
    "year": "2024"}` (a key given twice is a list)."""
    grouped: dict[str, list[str]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadRequest(f"--meta takes KEY=VALUE (got {item!r})")
        grouped.setdefault(key.strip(), []).append(value)
    raw = {k: v[0] if len(v) == 1 else v for k, v in grouped.items()}
    return {k: v for k, v in check_metadata(raw).items() if v is not None}


def apply_patch(current: Mapping[str, Any], patch: Mapping[str, MetadataValue | None]) -> dict[str, Any]:
    """JSON merge patch of a person's (checked) keys: a value sets a key, null removes it; reserved keys stay."""
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    if len(merged) > MAX_KEYS + len(RESERVED_KEYS) + len(EXTRACTED_KEYS):
        raise BadRequest(f"the document would have {len(merged)} metadata keys: at most {MAX_KEYS} of yours")
    return merged


def merge_extracted(
    current: Mapping[str, Any], previous: Mapping[str, Any], extracted: Mapping[str, Any]
) -> dict[str, Any]:
    """`current` metadata with a new extraction: the extractor's earlier keys (value unchanged since it wrote
    them) are replaced or removed; a key a person set or changed is kept as it is."""
    merged = {k: v for k, v in current.items() if not (k in previous and previous[k] == v)}
    for key, value in extracted.items():
        if key not in merged:
            merged[key] = value
    return merged
