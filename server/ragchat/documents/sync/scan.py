"""Walking a synced folder and reading its files, safely: streamed, never outside the folder, bounded reads.

The walk yields entries one folder at a time (name order), never follows a symlink to a folder, follows a
symlink to a file only when the file is inside the folder, and never opens anything but regular files (a
FIFO would block a read forever). Reads open the file without following a final symlink, check where the
opened file really is, and stop past the size cap.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

READ_CHUNK = 1024 * 1024
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class FileEntry:
    rel: str  # relative to the folder, "/"-separated
    path: str  # what to open: the entry itself, or a symlink's target inside the folder
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Skipped:
    rel: str
    reason: str


@dataclass(frozen=True)
class Unlisted:
    """A folder that could not be listed, or an entry that could not be looked at: what was synced from it is
    kept, not removed."""

    rel: str
    reason: str


Found = FileEntry | Skipped | Unlisted


class ReadError(Exception):
    """A file could not be read (gone, unreadable, not a regular file, outside the folder, over the cap)."""


class TooBig(ReadError):
    pass


class Gone(ReadError):
    """Deleted since the walk saw it: the next sync removes what was synced from it."""


def inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def walk(root: str, dirs: list[str] | None = None) -> Iterator[Found]:
    """Everything under `root` (an absolute path with symlinks resolved). Folders listed go into `dirs`."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        full = os.path.join(root, rel_dir) if rel_dir else root
        try:
            with os.scandir(full) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield Unlisted(rel_dir or ".", f"cannot list the folder: {_why(exc)}")
            continue
        if dirs is not None:
            dirs.append(full)
        subdirs: list[str] = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not _valid_name(entry.name):
                yield Skipped(os.fsencode(rel).decode("utf-8", "backslashreplace"), "the name is not valid UTF-8")
            elif entry.name.startswith("."):
                yield Skipped(rel, "hidden")
            else:
                try:
                    if entry.is_symlink():
                        yield _follow(root, rel, entry.path)
                    elif entry.is_dir(follow_symlinks=False):
                        subdirs.append(rel)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        yield FileEntry(rel, entry.path, st.st_size, st.st_mtime_ns)
                    else:
                        yield Skipped(rel, "not a regular file (a device, socket or pipe)")
                except FileNotFoundError:  # gone between the listing and the stat: as if it was not there
                    continue
                except OSError as exc:  # there, but unreadable: what was synced from it stays
                    yield Unlisted(rel, f"cannot read: {_why(exc)}")
        stack.extend(reversed(subdirs))


def _follow(root: str, rel: str, path: str) -> Found:
    target = os.path.realpath(path)
    if not inside(root, target):
        return Skipped(rel, "a symlink to outside the folder (not followed)")
    try:
        st = os.stat(target)
    except OSError:
        return Skipped(rel, "a broken symlink (or a symlink loop)")
    if stat.S_ISDIR(st.st_mode):
        return Skipped(rel, "a symlink to a folder (not followed; files inside this folder sync from where they are)")
    if not stat.S_ISREG(st.st_mode):
        return Skipped(rel, "not a regular file (a device, socket or pipe)")
    return FileEntry(rel, target, st.st_size, st.st_mtime_ns)


def _valid_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes come through as surrogates
        return False
    return True


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class _Opened:
    """A regular file inside `root`, opened without following symlinks; `stat` is its fstat."""

    def __init__(self, root: str, path: str, limit: int) -> None:
        try:
            self.fd = os.open(path, _OPEN_FLAGS)
        except FileNotFoundError as exc:
            raise Gone("deleted meanwhile") from exc
        except OSError as exc:
            raise ReadError(f"cannot open: {_why(exc)}") from exc
        try:
            self.stat = os.fstat(self.fd)
            if not stat.S_ISREG(self.stat.st_mode):
                raise ReadError("not a regular file")
            real = _real_path(self.fd)
            if real is not None and not inside(root, real):
                raise ReadError(f"the file is outside the folder ({real}): refused")
            if self.stat.st_size > limit:
                raise TooBig(f"{self.stat.st_size:,} bytes is over the size limit")
        except BaseException:
            os.close(self.fd)
            raise
        self.limit = limit

    def chunks(self) -> Iterator[bytes]:
        total = 0
        try:
            while chunk := os.read(self.fd, READ_CHUNK):
                total += len(chunk)
                if total > self.limit:
                    raise TooBig("the file grew over the size limit while it was read")
                yield chunk
        except OSError as exc:
            raise ReadError(f"cannot read: {_why(exc)}") from exc
        finally:
            os.close(self.fd)


def _real_path(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc (not Linux): the open itself refused a final symlink
        return None


@dataclass(frozen=True)
class Content:
    sha256: str
    size: int
    mtime_ns: int
    data: bytes | None  # only when asked for


def read(root: str, entry: FileEntry, limit: int, *, keep: bool = False) -> Content:
    """Hash the file in chunks (bounded memory); its bytes too when `keep`. Raises ReadError."""
    opened = _Opened(root, entry.path, limit)
    digest = hashlib.sha256()
    parts: list[bytes] = []
    for chunk in opened.chunks():
        digest.update(chunk)
        if keep:
            parts.append(chunk)
    return Content(
        digest.hexdigest(),
        opened.stat.st_size,
        opened.stat.st_mtime_ns,
        b"".join(parts) if keep else None,
    )
