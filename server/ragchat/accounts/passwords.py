"""Password hashing with argon2id (argon2-cffi's RFC 9106 low-memory profile), off the event loop.

Each hash takes ~64 MiB and tens of milliseconds of CPU, so at most `MAX_CONCURRENT` run at once; the login
rate limit keeps the queue short. Verifying against a fixed dummy hash when the user does not exist gives a
wrong username the same cost, and so the same timing, as a wrong password.
"""

from __future__ import annotations

import anyio
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from ragchat.core.errors import BadRequest

MIN_LENGTH = 8
MAX_LENGTH = 1024  # argon2 takes any length; this bounds the work a request can ask for
MAX_CONCURRENT = 2

_hasher = PasswordHasher()
_limiter = anyio.CapacityLimiter(MAX_CONCURRENT)
_dummy_hash: str | None = None


def check_strength(password: str) -> None:
    if len(password) < MIN_LENGTH:
        raise BadRequest(f"the password is too short (at least {MIN_LENGTH} characters)")
    if len(password) > MAX_LENGTH:
        raise BadRequest(f"the password is too long (at most {MAX_LENGTH} characters)")
    if "\x00" in password:
        raise BadRequest("the password contains a NUL character")


async def hash_password(password: str) -> str:
    check_strength(password)
    return await anyio.to_thread.run_sync(_hasher.hash, password, limiter=_limiter)


def _dummy() -> str:
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = _hasher.hash("not the password of anyone")
    return _dummy_hash


async def warm() -> None:
    """Make the dummy hash now, so the first login of an unknown user costs no more than any other."""
    await anyio.to_thread.run_sync(_dummy, limiter=_limiter)


def _verify(stored: str | None, password: str) -> bool:
    if stored is None:
        stored = _dummy()
        password = password + "\x00"  # never matches the dummy
    try:
        return _hasher.verify(stored, password[:MAX_LENGTH])
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


async def verify_password(stored: str | None, password: str) -> bool:
    """True if `password` matches `stored`; with `stored=None` (no such user) the same work, and False."""
    return await anyio.to_thread.run_sync(_verify, stored, password, limiter=_limiter)


def needs_rehash(stored: str) -> bool:
    return _hasher.check_needs_rehash(stored)
