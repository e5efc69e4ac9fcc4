"""The HTTP edge every domain's routes share: the one error body, OpenAPI responses, request ids, event streams,
and the search results as the API shows them (rendered: `citation`, `snippet`). Litestar lives here and above,
never in `ragchat.core`."""
