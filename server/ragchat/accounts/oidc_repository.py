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


async def account_named(conn: Conn, username: str) -> dict[str, Any] | None:
    """An account (not a service user) whose username is this, case-insensitively."""
    return await (
        await conn.execute(
            f"""SELECT {USER_COLUMNS} FROM users
                WHERE lower(username) = lower(%s) AND password_hash IS NOT NULL""",
            (username,),
        )
    ).fetchone()


async def name_taken(conn: Conn, username: str) -> bool:
    row = await (
        await conn.execute("SELECT EXISTS (SELECT 1 FROM users WHERE lower(username) = lower(%s)) AS t", (username,))
    ).fetchone()
    return bool(row and row["t"])


async def link(conn: Conn, issuer: str, subject: str, user_id: UUID, email: str | None) -> None:
    await conn.execute(
        """INSERT INTO oidc_identities (issuer, subject, user_id, email) VALUES (%s, %s, %s, %s)
           ON CONFLICT (issuer, subject) DO UPDATE SET last_login_at = now(), email = excluded.email""",
        (issuer, subject, user_id, email),
    )


async def identities_of(conn: Conn, user_id: UUID) -> list[dict[str, Any]]:
    return await (
        await conn.execute(
            "SELECT issuer, subject, email, created_at, last_login_at FROM oidc_identities WHERE user_id = %s",
            (user_id,),
        )
    ).fetchall()
