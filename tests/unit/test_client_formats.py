"""The web client's list of file types (client/src/documents/formats.ts: the file picker's accept list and the
documents page's type filter) is the server's: every type the server takes can be picked, and no other."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from ragchat.documents.catalog.listing import TYPE_FAMILIES, TypeFamily
from ragchat.documents.parsing.parsers import CONTENT_TYPES

FORMATS_TS = (Path(__file__).resolve().parents[2] / "client" / "src" / "documents" / "formats.ts").read_text()


def client_formats() -> dict[str, str]:
    return dict(re.findall(r'\{ ext: "(\.[a-z0-9]+)", family: "([a-z]+)" \}', FORMATS_TS))


def test_the_picker_takes_every_type_the_server_takes() -> None:
    assert set(client_formats()) == set(CONTENT_TYPES)


def test_each_extension_is_in_the_server_type_filter_it_names() -> None:
    for ext, family in client_formats().items():
        assert CONTENT_TYPES[ext] in TYPE_FAMILIES[family], (ext, family)


def test_the_type_filters_are_the_servers() -> None:
    labels = set(re.findall(r"^  ([a-z]+): \"", FORMATS_TS.split("TYPE_LABELS", 1)[1], flags=re.M))
    assert labels == set(TYPE_FAMILIES) == set(typing.get_args(TypeFamily)) - {"other"}
