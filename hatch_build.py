"""Build hook (hatchling): a wheel carries the SQL migrations and the built web client inside the package.

`pip install .` / `pip wheel .` / `make wheel` put `migrations/` at `ragchat/_bundle/migrations` and `client/dist/`
at `ragchat/_bundle/client` (server/ragchat/resources.py finds them there, else in the checkout). An sdist carries
`client/dist/` as it is, so a wheel built from it gets the same. Editable installs (`pip install -e .`) copy
nothing: they read the checkout. The client must be built first (`make client`); the build stops otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

CLIENT_MISSING = """
ragchat: client/dist/index.html is missing, and a ragchat wheel must carry the built web client.
Build it first, then build the wheel again:

    make client        (or: cd client && npm ci && npm run build)
"""


class BundleFiles(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        root = Path(self.root)
        client = root / "client" / "dist"
        if not (client / "index.html").is_file():
            raise RuntimeError(CLIENT_MISSING)
        migrations = root / "migrations"
        if not any(migrations.glob("[0-9][0-9][0-9][0-9]_*.sql")):
            raise RuntimeError(f"ragchat: no migrations in {migrations}")
        if self.target_name == "wheel":
            build_data["force_include"][str(migrations)] = "ragchat/_bundle/migrations"
            build_data["force_include"][str(client)] = "ragchat/_bundle/client"
        elif self.target_name == "sdist":  # client/dist is git-ignored, so not picked up on its own
            build_data["force_include"][str(client)] = "client/dist"
