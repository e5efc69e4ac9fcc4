"""tools/check_licenses.py (`make lint`): which licence strings count as GPL/AGPL."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "check_licenses", Path(__file__).parents[2] / "tools" / "check_licenses.py"
)
assert _spec and _spec.loader
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


@pytest.mark.parametrize(
    ("licence", "bad"),
    [
        ("GNU Affero General Public License v3", True),  # ebooklib's
        ("AGPL-3.0-or-later", True),
        ("GPL-2.0-only", True),
        ("GNU General Public License v3 (GPLv3)", True),
        ("GNU Lesser General Public License v3 (LGPLv3)", False),  # psycopg's
        ("LGPL-3.0-only", False),
        ("MPL-1.1 OR GPL-2.0-only OR LGPL-2.1-or-later", False),  # tld's: a choice
        ("MIT License", False),
        ("Apache-2.0", False),
        ("BSD-3-Clause", False),
    ],
)
def test_forbidden(licence: str, bad: bool) -> None:
    assert check.forbidden(licence) is bad
