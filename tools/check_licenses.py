"""`make lint`: no runtime dependency of ragchat-server under the GPL or the AGPL (LGPL is fine).

The runtime set is the closure of pyproject.toml's `dependencies` (the dev extra is not shipped), as installed in
this environment; each one's licence is read by pip-licenses (metadata, then classifiers). A licence offered
with an alternative (`MPL-1.1 OR GPL-2.0-only`) passes when some alternative is not the GPL.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution

from packaging.requirements import Requirement

PYPROJECT = "pyproject.toml"
# GPL or AGPL in any spelling, but not the Lesser GPL
FORBIDDEN = re.compile(r"(?<![L\w])A?GPL|GNU (Affero )?General Public License", re.IGNORECASE)


def forbidden(licence: str) -> bool:
    return all(FORBIDDEN.search(choice) for choice in re.split(r"\s+OR\s+", licence))


def runtime_closure(requirements: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = [Requirement(r).name for r in requirements]
    while todo:
        name = todo.pop()
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # e.g. a requirement for another platform
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # an extra's requirement (or another platform's)
            todo.append(req.name)
    return seen


def main() -> int:
    with open(PYPROJECT, "rb") as f:
        requirements = tomllib.load(f)["project"]["dependencies"]
    packages = sorted(runtime_closure(requirements))
    out = subprocess.run(
        [sys.executable, "-m", "piplicenses", "--from=mixed", "--format=json", "--packages", *packages],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    bad = [(p["Name"], p["License"]) for p in json.loads(out) if forbidden(p["License"])]
    for name, licence in bad:
        print(f"check_licenses: {name} is a runtime dependency under {licence}", file=sys.stderr)
    print(f"check_licenses: {len(packages)} runtime dependencies, {len(bad)} under the GPL/AGPL")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
