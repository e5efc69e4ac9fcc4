"""The embedded PostgreSQL (pgserver: PostgreSQL 16 + pgvector) used when DATABASE_URL is unset."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class EmbeddedPostgres:
    """A handle on a pgserver instance; `stop()` releases it (the last process out stops the server)."""

    server: Any
    uri: str

    def stop(self) -> None:
        try:
            self.server.cleanup()
        except Exception:  # already stopped or another process owns it
            log.debug("pgserver cleanup failed", exc_info=True)


def start_embedded(data_dir: Path) -> EmbeddedPostgres:
    """Start (or attach to) the pgserver in `data_dir/pgdata`. A second process on the same dir reuses it."""
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from pgserver import get_server  # pyright: ignore[reportPrivateImportUsage]

    pgdata = Path(data_dir).expanduser().resolve() / "pgdata"
    pgdata.mkdir(parents=True, exist_ok=True)
    server = get_server(pgdata, cleanup_mode="stop")
    uri = server.get_uri()
    log.info("embedded postgres at %s", pgdata)
    return EmbeddedPostgres(server=server, uri=uri)
