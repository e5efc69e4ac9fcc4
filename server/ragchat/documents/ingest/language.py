"""A document's language, detected at ingest, and the Postgres text-search configuration its chunks are analysed
with (issue 42): `german`, `spanish`, … for the languages the server has a stemmer for, `simple` (no stemming,
no stop words) when the detector cannot name the language or the server has no configuration for it.

The detector is lingua (`lingua-language-detector`: its models ship in the wheel, nothing is downloaded),
restricted to the languages that have a configuration on the connected server (`SELECT cfgname FROM pg_ts_config`:
about 28 on PostgreSQL 16+, fewer on 15), in its low-accuracy mode (trigram models only: ~60 MB resident,
loaded once per process on first use) over a sample of the text spread across the document (at most
`SAMPLE_CHARS`), so a 50 MB document costs what a page does. Too little text to tell (a one-word document,
a table of numbers) is `simple`. One configuration per document: a document in two languages gets the one most
of its sample is in (the reader's query is analysed with every configuration in scope, so the other half's
words still match when they are spelled as in the query).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

from ragchat.db.pool import Conn, Pool
from ragchat.documents.catalog.shared import DetectedLanguage

__all__ = ["SIMPLE", "LanguageDetection", "detection_for", "server_configs"]

SIMPLE = "simple"
SAMPLE_CHARS = 3000  # characters the detector reads per document, from up to SAMPLE_PIECES places
SAMPLE_PIECES = 8
MIN_LETTERS = 20  # fewer letters than this in the sample: the language cannot be told (→ simple)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)

#: lingua's languages whose Postgres configuration is not the language's own English name in lower case
_CONFIG_NAMES: dict[Language, str] = {Language.BOKMAL: "norwegian", Language.NYNORSK: "norwegian"}


def config_of(language: Language) -> str:
    return _CONFIG_NAMES.get(language, language.name.lower())


async def server_configs(conn: Conn) -> frozenset[str]:
    """The text-search configurations of the connected server (pg_catalog's: a stemmer each, and `simple`)."""
    rows = await (
        await conn.execute("SELECT cfgname FROM pg_ts_config WHERE cfgnamespace = 'pg_catalog'::regnamespace")
    ).fetchall()
    return frozenset(str(r["cfgname"]) for r in rows)


def sample(texts: Sequence[str], chars: int = SAMPLE_CHARS, pieces: int = SAMPLE_PIECES) -> str:
    """Up to `chars` characters taken from `pieces` texts spread evenly over `texts` (the chunks, in order)."""
    if not texts:
        return ""
    step = max(1, len(texts) // pieces)
    picked = list(texts[::step])[:pieces]
    share = max(1, chars // len(picked))
    return " ".join(t[:share] for t in picked)


class LanguageDetection:
    """Detects a text's language among those the server can stem; `fixed` (TEXT_SEARCH_CONFIG other than auto)
    skips detection and analyses every document with that configuration."""

    def __init__(self, configs: Iterable[str], fixed: str | None = None) -> None:
        self.configs = frozenset(configs)
        self.fixed = fixed if fixed is None or fixed in self.configs else SIMPLE
        self.languages = [lang for lang in Language.all() if config_of(lang) in self.configs]
        self._detector: LanguageDetector | None = None
        self._lock = threading.Lock()

    def _built(self) -> LanguageDetector | None:
        if len(self.languages) < 2:
            return None
        with self._lock:
            if self._detector is None:
                builder = LanguageDetectorBuilder.from_languages(*self.languages)
                self._detector = builder.with_low_accuracy_mode().build()
            return self._detector

    def detect(self, texts: Sequence[str]) -> DetectedLanguage:
        """The language of `texts` (a document's chunks, in order) and its configuration."""
        if self.fixed is not None:
            return DetectedLanguage(None, self.fixed)
        text = sample(texts)
        if len(_LETTER.findall(text)) < MIN_LETTERS:
            return DetectedLanguage(None, SIMPLE)
        detector = self._built()
        found = detector.detect_language_of(text) if detector is not None else None
        if found is None:
            return DetectedLanguage(None, SIMPLE)
        return DetectedLanguage(found.iso_code_639_1.name.lower(), config_of(found))


_BUILT: dict[tuple[frozenset[str], str | None], LanguageDetection] = {}


async def detection_for(pool: Pool, setting: str) -> LanguageDetection:
    """The process's detection for TEXT_SEARCH_CONFIG (`auto`, or one configuration for every document), over the
    connected server's configurations (one detector per process: its models load once)."""
    async with pool.connection() as conn:
        configs = await server_configs(conn)
    fixed = None if setting == "auto" else setting
    key = (configs, fixed)
    if key not in _BUILT:
        _BUILT[key] = LanguageDetection(configs, fixed)
    return _BUILT[key]
