"""The setup token: creating the first admin on a server others can reach needs it, so the first stranger to
open a new server's page does not become its admin. RAGCHAT_SETUP_TOKEN sets it; a server listening beyond
loopback without one makes a one-time token at start and prints the link to use (the runtime's start-up
notices). A loopback-only server is not guarded (whoever reaches it is on this machine)."""

from __future__ import annotations

import secrets

from ragchat.core.errors import Forbidden
from ragchat.settings import AccountSettings, ServerSettings, is_loopback


class SetupTokenRequired(Forbidden):
    """POST /api/auth/setup without the server's setup token (403)."""

    code = "setup_token_required"

    @classmethod
    def for_token(cls, token: str | None) -> SetupTokenRequired:
        if not token:
            return cls(
                "creating the first admin on this server needs its setup token: open the link `ragchat serve` "
                "printed at start (…/?setup_token=…), or add ?setup_token=<RAGCHAT_SETUP_TOKEN> to the address"
            )
        return cls("this setup token is not the server's: use the link `ragchat serve` printed at start")


def setup_token(settings: AccountSettings, server: ServerSettings, *, local_login: bool) -> str | None:
    """RAGCHAT_SETUP_TOKEN, else a one-time token when the server listens beyond loopback (auth and passwords
    on: `local_login`, LOCAL_LOGIN_ENABLED); None: first-admin creation is not guarded."""
    if settings.setup_token is not None and settings.setup_token.get_secret_value():
        return settings.setup_token.get_secret_value()
    if settings.auth == "on" and local_login and not is_loopback(server.host):
        return secrets.token_urlsafe(18)
    return None


def setup_notice(settings: AccountSettings, server: ServerSettings, token: str) -> tuple[str, str | None]:
    """The start-up line while no admin exists, and the link in it: with a made token, the link to open (its
    one disclosure, on purpose, as Jupyter's); with RAGCHAT_SETUP_TOKEN, only the way (the operator has it)."""
    if settings.setup_token is not None and settings.setup_token.get_secret_value():
        return (
            "ragchat: no admin account yet: create it on the web page opened with ?setup_token=<RAGCHAT_SETUP_TOKEN>",
            None,
        )
    host = server.host
    host = "localhost" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
    url = f"http://{host}:{server.port}/?setup_token={token}"
    return (
        f"ragchat: no admin account yet: create it at {url} (with this server's address for the host; the "
        "token is this start's own, or set RAGCHAT_SETUP_TOKEN)",
        url,
    )
