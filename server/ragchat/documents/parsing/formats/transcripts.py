"""Transcripts: WebVTT (webvtt-py) and SubRip (srt) -> sections of consecutive cues, each with its time span.

Cues are grouped into sections of at most about `SECTION_CHARS` characters (well under a chunk), located by
`{"start_s": first cue's start, "end_s": last cue's end}`. Voice tags (`<v Alice>`) become "Alice: " before the
cue's text; other markup (`<i>`, `<c.yellow>`, `<font>`, `{\\an8}`, inline timestamps) is stripped. A file holds
at most MAX_ELEMENTS cues (counted before any is parsed); WebVTT is parsed in batches of cues, and srt streams.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

from ragchat.documents.parsing.document import ParsedDocument, make_document
from ragchat.documents.parsing.formats.common import Grouper, check_count
from ragchat.documents.parsing.limits import Deadline, ParseError, ParseLimits, mislabelled
from ragchat.documents.parsing.text import decode_text, normalize_newlines, one_line, short_error

_VOICE = re.compile(r"<v(?:\.[\w-]+)*[ \t]+([^>]+)>")
_TAG = re.compile(r"<[^>\n]*>")
_ASS_TAG = re.compile(r"\{\\[^}\n]*\}")
_VTT_HEADER = re.compile(r"WEBVTT(?:[ \t\n]|$)")
_SRT_START = re.compile(r"\s*\d+[ \t]*\n\s*\d+:\d{1,2}:\d{1,2}[,.]\d{1,3}[ \t]*-->")
_VTT_BATCH_CUES = 512


def _cue_text(lines: list[str]) -> tuple[str, str | None]:
    """A cue's plain text ("Alice: Hello" for a voice), and its first speaker."""
    out: list[str] = []
    first: str | None = None
    for line in lines:
        voice = _VOICE.search(line)
        speaker = one_line(html.unescape(voice.group(1))) if voice else ""
        text = one_line(html.unescape(_TAG.sub("", _ASS_TAG.sub("", line))))
        if not text:
            continue
        first = first or speaker or None
        out.append(f"{speaker}: {text}" if speaker else text)
    return " ".join(out), first


def _locate(first: tuple[float, float], last: tuple[float, float]) -> dict[str, Any]:
    return {"start_s": round(first[0], 3), "end_s": round(max(last[1], first[0]), 3)}


def _group(cues: Iterator[tuple[float, float, list[str]]], deadline: Deadline) -> tuple[Grouper, int, float]:
    grouper = Grouper(_locate, joiner="\n")
    speaker: str | None = None
    count, end = 0, 0.0
    for start, stop, lines in cues:
        count += 1
        if count % 1024 == 0:
            deadline.check(f"cue {count:,}")
        text, who = _cue_text(lines)
        if not text:
            continue
        # a new speaker starts a paragraph; otherwise cues run on as one text (a cue often cuts a sentence)
        grouper.add(text, (start, stop), "\n\n" if who and who != speaker else "\n")
        speaker = who or speaker
        end = max(end, stop)
    return grouper, count, end


def _transcript(data: bytes, stem: str, ext: str) -> tuple[str, str]:
    text, encoding = decode_text(data, ext)
    return normalize_newlines(text.lstrip("\ufeff")), encoding


def parse_vtt(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    text, encoding = _transcript(data, stem, ".vtt")
    if not _VTT_HEADER.match(text):
        if _SRT_START.match(text):
            raise ParseError(mislabelled("a SubRip subtitle file (.srt)", ".vtt"))
        raise ParseError("not a WebVTT file: its first line must be WEBVTT; convert it or use the right extension")
    check_count(text.count("-->"), limits, "cues")
    grouper, count, end = _group(_vtt_cues(text), deadline)
    sections = grouper.finish()
    if not sections:
        raise ParseError("the WebVTT file has no cue with text")
    return make_document(stem, sections, {"encoding": encoding, "cues": count, "duration_s": round(end, 3)})


def _vtt_cues(text: str) -> Iterator[tuple[float, float, list[str]]]:
    """Cues parsed by webvtt-py a batch at a time (it builds every caption of its input up front); a batch
    ends at an empty line, which always ends a WebVTT block."""
    import webvtt
    from webvtt.errors import MalformedCaptionError, MalformedFileError

    batch: list[str] = []
    cues = 0
    for line in _lines(text):
        batch.append(line)
        cues += "-->" in line
        if not line and cues >= _VTT_BATCH_CUES:
            yield from _vtt_batch(webvtt, batch, (MalformedCaptionError, MalformedFileError))
            batch, cues = ["WEBVTT", ""], 0
    yield from _vtt_batch(webvtt, batch, (MalformedCaptionError, MalformedFileError))


def _vtt_batch(webvtt: Any, lines: list[str], errors: tuple[type[Exception], ...]) -> Iterator[Any]:
    try:
        captions = webvtt.WebVTT.from_buffer(lines).captions
    except errors as exc:
        raise ParseError(f"not a valid WebVTT file: {short_error(exc)}") from exc
    for caption in captions:
        start, end = caption.start_time.in_milliseconds() / 1000, caption.end_time.in_milliseconds() / 1000
        yield start, end, list(caption.lines)


def _lines(text: str) -> Iterator[str]:
    pos = 0
    while pos <= len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        yield text[pos:end]
        pos = end + 1


def parse_srt(data: bytes, stem: str, limits: ParseLimits, deadline: Deadline) -> ParsedDocument:
    import srt

    text, encoding = _transcript(data, stem, ".srt")
    if _VTT_HEADER.match(text):
        raise ParseError(mislabelled("a WebVTT subtitle file (.vtt)", ".srt"))
    if not _SRT_START.match(text):
        raise ParseError(
            "not a SubRip (.srt) file: it must start with a cue number and a timing line like "
            "00:00:01,000 --> 00:00:04,000"
        )
    check_count(text.count("-->"), limits, "cues")

    def cues() -> Iterator[tuple[float, float, list[str]]]:
        try:
            for sub in srt.parse(text):
                yield sub.start.total_seconds(), sub.end.total_seconds(), sub.content.split("\n")
        except (srt.SRTParseError, ValueError) as exc:
            raise ParseError(f"not a valid SubRip (.srt) file: {short_error(exc)[:160]}") from exc

    grouper, count, end = _group(cues(), deadline)
    sections = grouper.finish()
    if not sections:
        raise ParseError("the SubRip file has no cue with text")
    return make_document(stem, sections, {"encoding": encoding, "cues": count, "duration_s": round(end, 3)})
