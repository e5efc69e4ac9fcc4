"""SQL for users, sessions and API tokens. Secrets are stored only as SHA-256 digests of random tokens."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any
from uuid import UUID

from ragchat.core.principal import LOCAL_OWNER_ID
from ragchat.db.pool import Conn

USER_COLUMNS = "id, coalesce(username, name) AS username, is_admin, disabled, created_at"
_USER_U = "u.id, coalesce(u.username, u.name) AS username, u.is_admin, u.disabled, u.created_at"
#: The identity provider refused this user at a re-check (oidc_repository.refuse): like a disabled account until
#: a sign-in through the provider succeeds again.
REFUSED = "EXISTS (SELECT 1 FROM oidc_identities i WHERE i.user_id = u.id AND i.refused_at IS NOT NULL)"
#: A re-check at the provider is due (`%s`: OIDC_RECHECK_S, NULL when single sign-on is off).
_DUE = """(%s::float8 IS NOT NULL AND EXISTS (SELECT 1 FROM oidc_identities i WHERE i.user_id = u.id
            AND i.refused_at IS NULL AND (i.refresh_token IS NOT NULL OR i.access_token IS NOT NULL)
            AND i.checked_at < now() - make_interval(secs => %s::float8))) AS oidc_due"""


async def any_account(conn: Conn) -> bool:
    row = await (
        await conn.execute("SELECT EXISTS (SELECT 1 FROM users WHERE password_hash IS NOT NULL) AS e")
    ).fetchone()
    return bool(row and row["e"])


async def user_by_name(conn: Conn, username: str) -> dict[str, Any] | None:
    """The user of this name, with `refused`: its identity provider refused it at a re-check."""
    return await (
        await conn.execute(
            f"""SELECT {_USER_U}, u.password_hash, {REFUSED} AS refused FROM users u
                WHERE lower(u.username) = lower(%s)""",
            (username,),
        )
    ).fetchone()


async def user_by_id(conn: Conn, user_id: UUID) -> dict[str, Any] | None:
    return await (
        await conn.execute(f"SELECT {USER_COLUMNS}, password_hash FROM users WHERE id = %s", (user_id,))
    ).fetchone()


async def claim_local(conn: Conn, username: str, password_hash: str) -> dict[str, Any] | None:
    """The first account takes over the built-in local owner (and everything stored before accounts)."""
    return await (
        await conn.execute(
            f"""UPDATE users SET username = %s, name = %s, password_hash = %s, is_admin = true, disabled = false,
                   updated_at = now()
                WHERE id = %s AND password_hash IS NULL RETURNING {USER_COLUMNS}""",
            (username, username, password_hash, LOCAL_OWNER_ID),
        )
    ).fetchone()


async def insert_user(conn: Conn, username: str, password_hash: str, is_admin: bool) -> dict[str, Any]:
    row = await (
        await conn.execute(
            f"""INSERT INTO users (name, username, password_hash, is_admin) VALUES (%s, %s, %s, %s)
                RETURNING {USER_COLUMNS}""",
            (username, username, password_hash, is_admin),
        )
    ).fetchone()
    assert row is not None
    return row


async def list_users(conn: Conn) -> list[dict[str, Any]]:
    return await (
        await conn.execute(
            f"""SELECT {USER_COLUMNS},
                   (SELECT max(s.last_seen_at) FROM sessions s WHERE s.user_id = u.id) AS last_seen_at
                FROM users u WHERE password_hash IS NOT NULL ORDER BY lower(username)"""
        )
    ).fetchall()


async def directory(conn: Conn) -> list[dict[str, Any]]:
    return await (
        await conn.execute(
            """SELECT id, username FROM users WHERE password_hash IS NOT NULL AND NOT disabled
               ORDER BY lower(username)"""
        )
    ).fetchall()


async def update_user(
    conn: Conn, user_id: UUID, *, disabled: bool | None, is_admin: bool | None
) -> dict[str, Any] | None:
    return await (
        await conn.execute(
            f"""UPDATE users SET disabled = coalesce(%s, disabled), is_admin = coalesce(%s, is_admin),
                   updated_at = now()
                WHERE id = %s AND password_hash IS NOT NULL RETURNING {USER_COLUMNS}""",
            (disabled, is_admin, user_id),
        )
    ).fetchone()


async def set_password(conn: Conn, user_id: UUID, password_hash: str) -> bool:
    cur = await conn.execute(
        "UPDATE users SET password_hash = %s, updated_at = now() WHERE id = %s AND password_hash IS NOT NULL",
        (password_hash, user_id),
    )
    return cur.rowcount == 1


async def delete_user(conn: Conn, user_id: UUID) -> bool:
    cur = await conn.execute("DELETE FROM users WHERE id = %s AND password_hash IS NOT NULL", (user_id,))
    return cur.rowcount == 1


async def other_active_admins(conn: Conn, user_id: UUID) -> int:
    row = await (
        await conn.execute(
            """SELECT count(*) AS n FROM users WHERE is_admin AND NOT disabled AND password_hash IS NOT NULL
               AND id <> %s""",
            (user_id,),
        )
    ).fetchone()
    return int(row["n"]) if row else 0


# ---- sessions ---------------------------------------------------------------------------------------------


async def insert_session(conn: Conn, token_hash: bytes, user_id: UUID, ttl_s: float, user_agent: str, ip: str) -> None:
    await conn.execute(
        """INSERT INTO sessions (token_hash, user_id, expires_at, user_agent, ip)
           VALUES (%s, %s, now() + make_interval(secs => %s), %s, %s)""",
        (token_hash, user_id, ttl_s, user_agent[:300], ip[:100]),
    )


async def session_user(conn: Conn, token_hash: bytes, recheck_s: float | None) -> dict[str, Any] | None:
    """The session's active user, or None (unknown, expired, the user disabled or refused by their identity
    provider); `oidc_due`: a re-check at the provider is due."""
    return await (
        await conn.execute(
            f"""SELECT s.last_seen_at, now() - s.last_seen_at > interval '60 seconds' AS stale,
                       {_USER_U}, {_DUE}
                FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.token_hash = %s AND s.expires_at > now() AND NOT u.disabled AND NOT {REFUSED}""",
            (recheck_s, recheck_s, token_hash),
        )
    ).fetchone()


async def touch_session(conn: Conn, token_hash: bytes, ttl_s: float) -> None:
    """Activity slides the expiry forward (written at most once a minute per session)."""
    await conn.execute(
        """UPDATE sessions SET last_seen_at = now(), expires_at = now() + make_interval(secs => %s)
           WHERE token_hash = %s""",
        (ttl_s, token_hash),
    )


async def delete_session(conn: Conn, token_hash: bytes) -> None:
    await conn.execute("DELETE FROM sessions WHERE token_hash = %s", (token_hash,))


async def delete_sessions(conn: Conn, user_id: UUID, keep: bytes | None = None) -> int:
    cur = await conn.execute(
        "DELETE FROM sessions WHERE user_id = %s AND token_hash IS DISTINCT FROM %s", (user_id, keep)
    )
    return cur.rowcount


async def delete_expired_sessions(conn: Conn) -> None:
    await conn.execute("DELETE FROM sessions WHERE expires_at < now()")


# ---- API tokens -------------------------------------------------------------------------------------------

TOKEN_COLUMNS = (
    "id, name, prefix, created_at, last_used_at, expires_at, coalesce(expires_at <= now(), false) AS expired"
)


async def insert_token(
    conn: Conn, user_id: UUID, name: str, prefix: str, token_hash: bytes, expires_at: datetime | None
) -> dict[str, Any]:
    row = await (
        await conn.execute(
            f"""INSERT INTO api_tokens (user_id, name, prefix, token_hash, expires_at) VALUES (%s, %s, %s, %s, %s)
                RETURNING {TOKEN_COLUMNS}""",
            (user_id, name, prefix, token_hash, expires_at),
        )
    ).fetchone()
    assert row is not None
    return row


async def list_tokens(conn: Conn, user_id: UUID) -> list[dict[str, Any]]:
    """Live and expired tokens (revoked ones are gone from the list)."""
    return await (
        await conn.execute(
            f"""SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE user_id = %s AND revoked_at IS NULL
                ORDER BY created_at DESC""",
            (user_id,),
        )
    ).fetchall()


async def revoke_token(conn: Conn, user_id: UUID, token_id: UUID) -> bool:
    cur = await conn.execute(
        "UPDATE api_tokens SET revoked_at = now() WHERE id = %s AND user_id = %s AND revoked_at IS NULL",
        (token_id, user_id),
    )
    return cur.rowcount == 1


async def revoke_tokens(conn: Conn, user_id: UUID, keep: UUID | None = None) -> int:
    """Every live token of the user but `keep` (a password change keeps the token it was made with)."""
    cur = await conn.execute(
        """UPDATE api_tokens SET revoked_at = now()
           WHERE user_id = %s AND revoked_at IS NULL AND id IS DISTINCT FROM %s""",
        (user_id, keep),
    )
    return cur.rowcount


async def token_user(conn: Conn, token_hash: bytes, recheck_s: float | None) -> dict[str, Any] | None:
    """The token's active user and whether the token has expired; None if unknown, revoked, the user disabled or
    refused by their identity provider; `oidc_due`: a re-check at the provider is due."""
    return await (
        await conn.execute(
            f"""SELECT t.id AS token_id, t.expires_at, coalesce(t.expires_at <= now(), false) AS expired,
                       (t.last_used_at IS NULL OR t.last_used_at < now() - interval '60 seconds') AS stale,
                       {_USER_U}, {_DUE}
                FROM api_tokens t JOIN users u ON u.id = t.user_id
                WHERE t.token_hash = %s AND t.revoked_at IS NULL AND NOT u.disabled AND NOT {REFUSED}""",
            (recheck_s, recheck_s, token_hash),
        )
    ).fetchone()


async def touch_token(conn: Conn, token_id: UUID) -> None:
    await conn.execute("UPDATE api_tokens SET last_used_at = now() WHERE id = %s", (token_id,))


async def credential_valid(conn: Conn, user_id: UUID, via: str, credential: str | None) -> bool:
    """Is this session / token still live and its user enabled? (`local` is always valid.)"""
    if via == "session" and credential:
        query = f"""SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = %s
                   AND s.user_id = %s AND s.expires_at > now() AND NOT u.disabled AND NOT {REFUSED}"""
        row = await (await conn.execute(query, (bytes.fromhex(credential), user_id))).fetchone()
        return row is not None
    if via == "token" and credential:
        query = f"""SELECT 1 FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = %s
                   AND t.user_id = %s AND t.revoked_at IS NULL AND NOT u.disabled AND NOT {REFUSED}
                   AND (t.expires_at IS NULL OR t.expires_at > now())"""
        row = await (await conn.execute(query, (UUID(credential), user_id))).fetchone()
        return row is not None
    return via == "local"


async def ensure_service_user(conn: Conn, user_id: UUID, name: str) -> None:
    await conn.execute("INSERT INTO users (id, name) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (user_id, name))


async def display_names(conn: Conn, user_ids: Collection[UUID]) -> dict[UUID, str]:
    """The name others see (username, else the service user's name) of each of `user_ids` that exists."""
    query = "SELECT id, coalesce(username, name) AS name FROM users WHERE id = ANY(%s)"
    rows = await (await conn.execute(query, (list(user_ids),))).fetchall()
    return {r["id"]: r["name"] for r in rows}


async def is_active(conn: Conn, user_id: UUID) -> bool:
    """The user exists and is not disabled (a service user without a login counts)."""
    row = await (await conn.execute("SELECT 1 FROM users WHERE id = %s AND NOT disabled", (user_id,))).fetchone()
    return row is not None
