"""Where the files ragchat ships beside its Python code are: the SQL migrations and the built web client.

A wheel (`pip install .`) carries them inside the package, in `ragchat/_bundle/` (hatch_build.py puts them there);
a checkout (editable install, tests, `make run`) has them at the repository's root. The installed copy wins.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLE_DIR = PACKAGE_DIR / "_bundle"
REPO_ROOT = PACKAGE_DIR.parent.parent  # server/ragchat → the checkout


def _first_dir(*candidates: Path) -> Path:
    """The first candidate that is a directory; else the last one (the checkout's path, for error messages)."""
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[-1]


def migrations_dir() -> Path:
    """`NNNN_*.sql`: the wheel's `ragchat/_bundle/migrations`, else `<repo>/migrations`."""
    return _first_dir(BUNDLE_DIR / "migrations", REPO_ROOT / "migrations")


def client_dist() -> Path:
    """The built web client: the wheel's `ragchat/_bundle/client`, else `<repo>/client/dist` (`make client`)."""
    return _first_dir(BUNDLE_DIR / "client", REPO_ROOT / "client" / "dist")
