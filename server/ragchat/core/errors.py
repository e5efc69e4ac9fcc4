"""Domain errors. One handler in `ragchat.app` maps them to HTTP; the CLI prints their message."""

from __future__ import annotations

from typing import Any


class RagchatError(Exception):
    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class BadRequest(RagchatError):
    status_code = 400
    code = "bad_request"


class NotFound(RagchatError):
    status_code = 404
    code = "not_found"


class PayloadTooLarge(RagchatError):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(RagchatError):
    status_code = 415
    code = "unsupported_media_type"


class ServiceUnavailable(RagchatError):
    status_code = 503
    code = "service_unavailable"


class DatabaseUnavailable(ServiceUnavailable):
    """The database does not answer (down, restarting, or the pool has no connection to give)."""

    code = "database_unavailable"

    def __init__(
        self,
        message: str = "The database (Postgres) is unavailable: check that it is running and that DATABASE_URL "
        "is right, then retry.",
    ) -> None:
        super().__init__(message)


class Unauthorized(RagchatError):
    """No credentials, or credentials that no longer work (expired session, revoked token, disabled user)."""

    status_code = 401
    code = "unauthorized"


class InvalidCredentials(Unauthorized):
    code = "invalid_credentials"


class Forbidden(RagchatError):
    status_code = 403
    code = "forbidden"


class CrossOrigin(Forbidden):
    code = "cross_origin"


class BadHost(RagchatError):
    status_code = 400
    code = "bad_host"


class Conflict(RagchatError):
    status_code = 409
    code = "conflict"


class SetupDone(Conflict):
    code = "setup_done"


class RateLimited(RagchatError):
    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, int(retry_after))


class SsoFailed(RagchatError):
    """A single sign-on that did not complete: a forged, replayed or expired callback, a token that does not verify."""

    status_code = 400
    code = "sso_failed"


class SsoRefused(SsoFailed):
    """The provider vouched for someone ragchat will not sign in (no matching account, a disabled one)."""

    status_code = 403
    code = "sso_refused"


class SsoUnavailable(SsoFailed):
    """The identity provider does not answer, or answers something that is not OpenID Connect."""

    status_code = 503
    code = "sso_unavailable"
