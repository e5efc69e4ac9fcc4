"""Print the OpenAPI document without starting a server: `python -m ragchat.cli.openapi [OUT]`.

The client's generated types (client/src/api/schema.d.ts, `npm run gen:api`) are made from this output,
and a test fails when the committed types differ from what the server would emit now.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def openapi_document() -> dict[str, Any]:
    """The schema of an app built on default settings (no runtime is opened: routes only)."""
    from ragchat.app import create_app
    from ragchat.settings import Settings

    app = create_app(Settings(_env_file=None))  # pyright: ignore[reportCallIssue]
    return app.openapi_schema.to_schema()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = json.dumps(openapi_document(), indent=2, sort_keys=True, default=str) + "\n"
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
