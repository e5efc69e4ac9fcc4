"""Single sign-on keeps asking: a user signed in through the identity provider is re-checked there every
OIDC_RECHECK_S, so a user disabled (or whose sign-in was revoked) at the provider loses access within that bound.

A sign-in keeps the provider's refresh token (and access token) in `oidc_identities`, on the server only. When a
request comes with a session or an API token of such a user and the last check is older than OIDC_RECHECK_S, the
check is claimed in the database (one request in one process asks; the others go on meanwhile) and made before
the request is answered: a refresh grant (or, without a refresh token, the userinfo endpoint with the access
token). The provider's no (`invalid_grant`, userinfo 401/403) marks the identity refused: the user's sessions end,
and their sessions, API tokens and password sign-ins are refused like a disabled account's until a sign-in
through the provider succeeds again. A provider that cannot be asked (down, slow, another error) is asked again
RETRY_S later; meanwhile the user keeps access (the provider's outage does not lock everyone out).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ragchat.accounts import oidc_repository as orepo
from ragchat.accounts import repository as repo
from ragchat.accounts.oidc import OidcClient
from ragchat.core.audit import Actor, AuditAction
from ragchat.core.errors import SsoUnavailable
from ragchat.db.pool import Pool
from ragchat.settings import OidcSettings

if TYPE_CHECKING:
    from ragchat.accounts.service import AccountService

log = logging.getLogger(__name__)

RETRY_S = 15.0  # a provider that could not be asked is asked again this much later
MAX_TOKEN = 4096
#: who the audit log names as having ended the sessions
PROVIDER_ACTOR = Actor(None, "identity provider")


def token_text(value: object) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_TOKEN and "\x00" not in value else None


class ProviderRecheck:
    def __init__(self, pool: Pool, client: OidcClient, settings: OidcSettings, accounts: AccountService | None) -> None:
        self.pool = pool
        self.client = client
        self.settings = settings
        self.accounts = accounts  # its audit writer records the provider's refusals

    async def check(self, user_id: UUID, username: str) -> bool:
        """Is this user still accepted by the identity provider? False once it refused (the caller answers 401)."""
        recheck_s = self.settings.oidc_recheck_s
        async with self.pool.connection() as conn:
            due = await orepo.claim_due(conn, user_id, recheck_s)
        if not due:
            return True  # another request is asking, or has just asked
        try:
            provider = await self.client.provider()
        except SsoUnavailable as exc:
            log.warning("OIDC re-check of %s postponed: %s", username, exc.message)
            await self._retry(due)
            return True
        for identity in due:
            if identity["issuer"] != provider.issuer:
                continue  # linked at a provider ragchat no longer uses (OIDC_ISSUER changed): nobody to ask
            answer = await self.client.recheck(
                provider,
                subject=identity["subject"],
                refresh_token=identity["refresh_token"],
                access_token=identity["access_token"],
            )
            if answer.refused is not None:
                await self._refuse(user_id, username, identity, answer.refused)
                return False
            async with self.pool.connection() as conn:
                if answer.tokens is not None:
                    tokens = answer.tokens
                    refresh, access = token_text(tokens.get("refresh_token")), token_text(tokens.get("access_token"))
                    await orepo.renewed(conn, identity["issuer"], identity["subject"], refresh, access)
                else:
                    log.warning("OIDC re-check of %s postponed: %s", username, answer.unavailable)
                    await orepo.retry_after(conn, identity["issuer"], identity["subject"], recheck_s, RETRY_S)
        return True

    async def _retry(self, due: list[dict[str, Any]]) -> None:
        async with self.pool.connection() as conn:
            for identity in due:
                await orepo.retry_after(
                    conn, identity["issuer"], identity["subject"], self.settings.oidc_recheck_s, RETRY_S
                )

    async def _refuse(self, user_id: UUID, username: str, identity: dict[str, Any], reason: str) -> None:
        log.warning("OIDC: the identity provider refused %s (%s): %s", username, identity["subject"], reason)
        async with self.pool.connection() as conn, conn.transaction():
            await orepo.refuse(conn, identity["issuer"], identity["subject"], reason)
            ended = await repo.delete_sessions(conn, user_id)
            if self.accounts is not None:
                await self.accounts.audit.record(
                    conn,
                    AuditAction.SIGN_OUT_EVERYWHERE,
                    PROVIDER_ACTOR,
                    target_type="user",
                    target_id=user_id,
                    details={"method": "oidc", "reason": reason[:300], "sessions": ended, "username": username},
                )
