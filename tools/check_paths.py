"""Stale paths in prose: every repository path a Markdown file or a Python comment or docstring names must exist.

A reference is a path-like word starting with `server/`, `ragchat/` (the package: `server/ragchat/`), `tests/`,
`bench/`, `client/`, `docs/` or `tools/` (`ragchat/chat/engine/loop.py`, `tests/unit/`, `bench/*.py`), and, in
Markdown, the target of a relative link (`[x](docs/API.md#mcp)`, resolved from the file's folder). Checked: the
Markdown and Python files git knows (tracked, or new and not ignored); `docs/history/**` is history and exempt. A
reference to a git-ignored place (what benches and builds write: `bench/results/`, `client/dist/`) is output and
accepted, and so is `ragchat/_bundle/` (only in a built wheel). A word is taken as a path when it ends in `/` or
names a file (`name.ext`); globs (`*`) and braces (`{json,txt}`) are expanded, placeholders (`<id>`, `…`) skipped.

    python tools/check_paths.py [ROOT]      # exit 1 and one line per stale reference
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: docs/history/** is history
EXEMPT = ("docs/history/",)
#: places that exist only inside a built wheel (hatch_build.py)
WHEEL_ONLY = ("ragchat/_bundle",)
PREFIXES = ("server", "ragchat", "tests", "bench", "client", "docs", "tools")
#: a path-like word at a word start (not inside a URL or another path: `ghcr.io/ragchat/…`, `~/.cache/ragchat/`)
WORD = re.compile(r"(?<![\w./~\\-])((?:" + "|".join(PREFIXES) + r")/[\w.*/{},<>…-]*)")
#: a Markdown link's target: [text](target) or [text](target "title")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Stale:
    file: str
    line: int
    ref: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.ref} does not exist"


def candidate(word: str) -> str | None:
    """The path a word names, or None when it is not taken as one."""
    word = word.split("::")[0].rstrip(".,;:)'\"`")
    if any(mark in word for mark in ("<", ">", "…")) or word.startswith(WHEEL_ONLY):
        return None
    last = word.rstrip("/").rsplit("/", 1)[-1]
    if word.endswith("/") or re.search(r"\.[A-Za-z0-9{}*]+$", last):
        return word
    return None


def resolve(root: Path, ref: str) -> Path:
    return root / "server" / ref if ref.startswith("ragchat/") else root / ref


def markdown_refs(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line, reference, is a relative link) for each path-like word and relative link target."""
    for number, line in enumerate(text.splitlines(), 1):
        for m in WORD.finditer(line):
            yield number, m.group(1), False
        for m in LINK.finditer(line):
            target = m.group(1).split("#")[0]
            if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("/"):
                yield number, target, True


def python_prose(source: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of each comment and docstring."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError):
        return
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    yield first.lineno, first.value.value


def ignored(root: Path, refs: Iterable[str]) -> set[str]:
    """The references git ignores (written by benches and builds, never committed)."""
    refs = sorted(set(refs))
    if not refs:
        return set()
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=root,
        input="\n".join(refs) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    return set(done.stdout.splitlines())


def files(root: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.md", "*.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [f for f in listed if not f.startswith(EXEMPT) and (root / f).is_file()]


def check(root: Path) -> list[Stale]:
    found: list[tuple[str, int, str, Path]] = []  # file, line, reference, the path it names
    for name in files(root):
        text = (root / name).read_text(encoding="utf-8", errors="replace")
        if name.endswith(".md"):
            for number, word, is_link in markdown_refs(text):
                if is_link:
                    found.append((name, number, word, ((root / name).parent / word)))
                elif (ref := candidate(word)) is not None:
                    found.append((name, number, ref, resolve(root, ref)))
        elif any(prefix + "/" in text for prefix in PREFIXES):  # else nothing to parse for
            for number, prose in python_prose(text):
                for offset, line in enumerate(prose.splitlines()):
                    for m in WORD.finditer(line):
                        if (ref := candidate(m.group(1))) is not None:
                            found.append((name, number + offset, ref, resolve(root, ref)))
    missing = [(f, n, ref, path) for f, n, ref, path in found if not _exists(root, path)]
    # a missing folder is asked about as a folder too: git matches `client/dist/` only to a name ending in `/`
    relative: dict[str, Path] = {}
    for _, _, ref, path in missing:
        if rel := _relative(root, path):
            relative[rel] = path
            if ref.endswith("/"):
                relative[rel + "/"] = path
    skip = {relative[r] for r in ignored(root, relative)}
    return [Stale(f, n, ref) for f, n, ref, path in missing if path not in skip]


def _relative(root: Path, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return ""


def _exists(root: Path, path: Path) -> bool:
    text = str(path)
    if "{" in text:  # bench/results/exhaustive.{json,txt}
        head, _, rest = text.partition("{")
        options, _, tail = rest.partition("}")
        return all(_exists(root, Path(head + o + tail)) for o in options.split(","))
    if "*" in text:
        rel = path.resolve().relative_to(path.anchor) if path.is_absolute() else path
        return any(Path(path.anchor).glob(str(rel)))
    return path.exists()


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parent.parent)
    stale = check(root)
    for s in stale:
        print(f"check_paths: {s}", file=sys.stderr)
    if not stale:
        print(f"check_paths: every path named in {len(files(root))} Markdown and Python files exists")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
