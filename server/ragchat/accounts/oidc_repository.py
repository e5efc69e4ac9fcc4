"""SQL for single sign-on: the sign-ins under way (oidc_flows) and the provider identities linked to users."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ragchat.accounts.repository import USER_COLUMNS
from ragchat.db.pool import Conn

_USER_U = "u.id, coalesce(u.username, u.name) AS username, u.is_admin, u.disabled, u.created_at"


async def insert_flow(
    conn: Conn, state_hash: bytes, browser_hash: bytes, nonce: str, code_verifier: str, redirect_uri: str, ttl_s: float
) -> None:
    await conn.execute(
        """INSERT INTO oidc_flows (state_hash, browser_hash, nonce, code_verifier, redirect_uri, expires_at)
           VALUES (%s, %s, %s, %s, %s, now() + make_interval(secs => %s))""",
        (state_hash, browser_hash, nonce, code_verifier, redirect_uri, ttl_s),
    )


async def take_flow(conn: Conn, state_hash: bytes) -> dict[str, Any] | None:
    """The flow of this state, deleted (a state works once, whatever happens next)."""
    return await (
        await conn.execute(
            """DELETE FROM oidc_flows WHERE state_hash = %s
               RETURNING browser_hash, nonce, code_verifier, redirect_uri, expires_at > now() AS live""",
            (state_hash,),
        )
    ).fetchone()


async def delete_expired_flows(conn: Conn) -> None:
    await conn.execute("DELETE FROM oidc_flows WHERE expires_at < now()")


async def linked_user(conn: Conn, issuer: str, subject: str) -> dict[str, Any] | None:
    return await (
        await conn.execute(
            f"""SELECT {_USER_U} FROM oidc_identities i JOIN users u ON u.id = i.user_id
                WHERE i.issuer = %s AND i.subject = %s AND u.password_hash IS NOT NULL""",
            (issuer, subject),
        )
    ).fetchone()


async def account_by_email(conn: Conn, email: str, issuer: str) -> dict[str, Any] | None:
    """The account (not a service user) whose username is this address (`email` is already normalised: ASCII,
    lower-case; the username is compared the same way, so Postgres's own case folding never decides), unless the
    account is linked to another subject of this provider already (then that address names someone else now)."""
    row = await (
        await conn.execute(
            f"""SELECT {USER_COLUMNS} FROM users
                WHERE lower(username) = %s AND password_hash IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM oidc_identities i WHERE i.user_id = users.id AND i.issuer = %s)""",
            (email, issuer),
        )
    ).fetchone()
    name = row["username"] if row else None
    return row if isinstance(name, str) and name.isascii() and name.lower() == email else None


async def name_taken(conn: Conn, username: str) -> bool:
    row = await (
        await conn.execute("SELECT EXISTS (SELECT 1 FROM users WHERE lower(username) = lower(%s)) AS t", (username,))
    ).fetchone()
    return bool(row and row["t"])


async def link(
    conn: Conn,
    issuer: str,
    subject: str,
    user_id: UUID,
    email: str | None,
    *,
    refresh_token: str | None,
    access_token: str | None,
) -> None:
    """The identity signed in: linked (or its link renewed), its tokens kept for the re-checks, any refusal
    forgotten (the provider has just said yes)."""
    await conn.execute(
        """INSERT INTO oidc_identities (issuer, subject, user_id, email, refresh_token, access_token)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (issuer, subject) DO UPDATE SET last_login_at = now(), email = excluded.email,
               refresh_token = excluded.refresh_token, access_token = excluded.access_token, checked_at = now(),
               refused_at = NULL, refused_reason = NULL""",
        (issuer, subject, user_id, email, refresh_token, access_token),
    )


async def claim_due(conn: Conn, user_id: UUID, recheck_s: float) -> list[dict[str, Any]]:
    """The user's identities whose last check at the provider is older than `recheck_s`, marked checked now
    (so concurrent requests, in any process, do not ask the provider again meanwhile)."""
    return await (
        await conn.execute(
            """UPDATE oidc_identities SET checked_at = now()
               WHERE user_id = %s AND refused_at IS NULL AND checked_at < now() - make_interval(secs => %s)
                 AND (refresh_token IS NOT NULL OR access_token IS NOT NULL)
               RETURNING issuer, subject, refresh_token, access_token""",
            (user_id, recheck_s),
        )
    ).fetchall()


async def renewed(conn: Conn, issuer: str, subject: str, refresh_token: str | None, access_token: str | None) -> None:
    """The provider said yes: keep the tokens it renewed (a provider may rotate its refresh tokens)."""
    await conn.execute(
        """UPDATE oidc_identities SET refresh_token = coalesce(%s, refresh_token),
               access_token = coalesce(%s, access_token), checked_at = now()
           WHERE issuer = %s AND subject = %s""",
        (refresh_token, access_token, issuer, subject),
    )


async def retry_after(conn: Conn, issuer: str, subject: str, recheck_s: float, retry_s: float) -> None:
    """The provider could not be asked: ask again in `retry_s` rather than a whole interval later."""
    await conn.execute(
        """UPDATE oidc_identities SET checked_at = now() - make_interval(secs => %s)
           WHERE issuer = %s AND subject = %s AND refused_at IS NULL""",
        (max(recheck_s - retry_s, 0.0), issuer, subject),
    )


async def refuse(conn: Conn, issuer: str, subject: str, reason: str) -> None:
    """The provider said no: the user's sessions and API tokens stop working (repository.py's queries read
    `refused_at`), and the tokens it refused are forgotten."""
    await conn.execute(
        """UPDATE oidc_identities SET refused_at = now(), refused_reason = %s, refresh_token = NULL,
               access_token = NULL
           WHERE issuer = %s AND subject = %s""",
        (reason[:500], issuer, subject),
    )
