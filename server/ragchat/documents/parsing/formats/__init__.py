"""Formats that keep where a passage came from: transcripts (.vtt, .srt), tables (.csv, .xlsx), slides (.pptx)
and e-books (.epub). Each parser has `parsers.parse`'s signature and runs under the same `ParseLimits`; each
section carries a `location` (see `Section`). `parsers.parse` finds them here by extension."""

from __future__ import annotations

from ragchat.documents.parsing.formats.epub import parse_epub
from ragchat.documents.parsing.formats.slides import parse_pptx
from ragchat.documents.parsing.formats.tabular import parse_csv, parse_xlsx
from ragchat.documents.parsing.formats.transcripts import parse_srt, parse_vtt

FORMAT_PARSERS = {
    ".vtt": parse_vtt,
    ".srt": parse_srt,
    ".csv": parse_csv,
    ".xlsx": parse_xlsx,
    ".pptx": parse_pptx,
    ".epub": parse_epub,
}
