"""The one exception handler: every error becomes the one body of `ragchat.httpapi.http`.

Our domain errors (`RagchatError`), Litestar's own (validation, unknown route, wrong method, body too large),
an unreachable database (503) and bugs (500: traceback logged with the request id, no internals in the
body). The security middleware, which answers before Litestar routes anything, uses the same body.
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException

from ragchat.core.errors import RagchatError, RateLimited
from ragchat.httpapi.http import HTTP_CODES, error_body, request_id_of
from ragchat.policy.request import database_error

log = logging.getLogger("ragchat.web")

#: Litestar's multipart parser refuses a part header over 4 KB (or more than 8 headers) as a 400 saying "Request
#: Entity Too Large"; in practice that is an over-long file name (registration refuses names over 255 characters).
MULTIPART_LIMIT = (
    "a multipart part's header is over 4 KB or it has more than 8 headers: a file name is at most 255 characters"
)


def as_ragchat_error(exc: BaseException) -> RagchatError | None:
    """Exceptions with a known meaning as domain errors (None for a bug); a database that does not answer as the
    request policy maps it (`ragchat.policy.request.database_error`)."""
    if isinstance(exc, RagchatError):
        return exc
    return database_error(exc)


def error_response(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    """The one exception handler: any exception → the one error body (always JSON, even on an SSE route)."""
    rid = request_id_of(request)
    path = str(request.scope.get("path", "?"))  # not request.url: it parses the Host header, which may be bad
    headers: dict[str, str] = {}
    extra: Any = None
    if isinstance(exc, HTTPException) and exc.status_code < 500:
        status, code, detail, extra = exc.status_code, HTTP_CODES.get(exc.status_code, "error"), exc.detail, exc.extra
        headers.update(exc.headers or {})
        if status == 400 and detail == "Request Entity Too Large":  # litestar's name for a multipart parser limit
            detail = MULTIPART_LIMIT
        if isinstance(extra, list) and extra:  # validation: name the fields in the detail too
            problems = [
                f"{e.get('key') or e.get('source')}: {e.get('message')}" for e in extra[:3] if isinstance(e, dict)
            ]
            detail = f"{detail} ({'; '.join(problems)})" if problems else detail
    elif isinstance(exc, RecursionError):  # a JSON body nested thousands deep: refused by the decoder, quickly
        status, code, detail = 400, "bad_request", "the request body is nested too deeply"
    elif (err := as_ragchat_error(exc)) is not None:
        status, code, detail, extra = err.status_code, err.code, err.message, err.extra
        if isinstance(err, RateLimited):
            extra = {"retry_after": err.retry_after}
            headers["Retry-After"] = str(err.retry_after)
        if status >= 500:
            log.warning("request %s: %s %s → %s %s", rid, request.method, path, status, code)
    else:  # a bug
        log.error("request %s: unhandled error on %s %s", rid, request.method, path, exc_info=exc)
        status, code = 500, "internal_error"
        detail = f"internal server error (logged on the server as {rid})"
    if status == 413:  # the rest of the body is not wanted: close rather than read it to keep the connection
        headers["Connection"] = "close"
    body = error_body(status, code, detail, rid, extra)
    return Response(body, status_code=status, headers=headers, media_type=MediaType.JSON)
