"""Per-user preferences: the environment gives the defaults, a user's Settings page overrides them."""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from ragchat.core.audit import AuditAction, AuditWriter
from ragchat.core.options import SearchMode
from ragchat.core.preferences import UserPreferences
from ragchat.core.principal import Principal
from ragchat.db.pool import Pool
from ragchat.preferences import repository as repo
from ragchat.preferences.schemas import PreferencesPatch, PreferencesView, PreferenceValues
from ragchat.settings import IngestionSettings, LLMSettings, RetrievalSettings

log = logging.getLogger(__name__)

#: Settings that take effect only after a restart: none (each is read per request or per document).
RESTART_REQUIRED: list[str] = []


def _text(value: Any) -> str:
    """An enum setting's value as plain text (StrEnum or str)."""
    return str(getattr(value, "value", value))


def environment_defaults(
    llm: LLMSettings, retrieval: RetrievalSettings, ingestion: IngestionSettings
) -> PreferenceValues:
    """What a user's preferences are until they change them: CHAT_MODEL, SEARCH_MODE, RERANK_ENABLED,
    CHUNK_STRATEGY, METADATA_EXTRACTION, CHAT_DOCUMENTS_ONLY, and the system's theme."""
    return PreferenceValues(
        chat_model=llm.chat_model,
        search_mode=_text(retrieval.search_mode),  # type: ignore[arg-type]  # validated by the model
        rerank=retrieval.rerank_enabled,
        chunk_strategy=ingestion.chunk_strategy,
        metadata_extraction=ingestion.metadata_extraction,
        theme="system",
        documents_only=llm.chat_documents_only,
    )


class PreferencesService:
    """Reads and changes one user's settings; `effective` is what the chat, uploads and ingestion apply."""

    def __init__(self, pool: Pool, defaults: PreferenceValues, audit: AuditWriter) -> None:
        self.pool = pool
        self._defaults = defaults
        self.audit = audit

    def defaults(self) -> PreferenceValues:
        """The environment's values (`environment_defaults`); the theme follows the system unless a user picks one."""
        return self._defaults.model_copy()

    def _apply(self, stored: dict[str, Any]) -> PreferenceValues:
        """Defaults overlaid with the stored keys; a stored value no longer valid is ignored (and logged)."""
        values = self.defaults().model_dump()
        for key, value in stored.items():
            if key not in values:
                continue
            try:
                PreferenceValues.model_validate({**values, key: value})
            except ValidationError:
                log.warning("user setting %s=%r is no longer valid: the default applies", key, value)
                continue
            values[key] = value
        return PreferenceValues.model_validate(values)

    def _view(self, stored: dict[str, Any]) -> PreferencesView:
        return PreferencesView(values=self._apply(stored), defaults=self.defaults(), restart_required=RESTART_REQUIRED)

    async def view(self, principal: Principal) -> PreferencesView:
        async with self.pool.connection() as conn:
            return self._view(await repo.stored(conn, principal.user_id))

    async def update(self, principal: Principal, patch: PreferencesPatch) -> PreferencesView:
        """Only the fields sent change; a field sent as null goes back to the default."""
        sent = patch.model_fields_set
        changed = {k: v for k, v in patch.model_dump().items() if k in sent and v is not None}
        if "chat_model" in changed:
            changed["chat_model"] = changed["chat_model"].strip()
        reset = sorted(k for k in sent if k not in changed)
        async with self.pool.connection() as conn:
            stored = await repo.merge(conn, principal.user_id, changed, reset)
            details = {"changed": changed, "reset": reset}
            await self.audit.record(
                conn,
                AuditAction.PREFERENCES_UPDATE,
                principal,
                target_type="user",
                target_id=principal.user_id,
                details=details,
            )
        return self._view(stored)

    async def effective(self, user_id: UUID) -> UserPreferences:
        """What this user's requests default to (the lookup the composition root hands to other domains)."""
        async with self.pool.connection() as conn:
            values = self._apply(await repo.stored(conn, user_id))
        return UserPreferences(
            chat_model=values.chat_model,
            search_mode=SearchMode(values.search_mode),
            rerank=values.rerank,
            chunk_strategy=values.chunk_strategy,
            metadata_extraction=values.metadata_extraction,
            theme=values.theme,
            documents_only=values.documents_only,
        )

    async def chose_metadata_extraction(self, value: bool) -> list[UUID]:
        """Who turned metadata extraction on (`value` True) or off on their page (core/preferences.py)."""
        async with self.pool.connection() as conn:
            return await repo.users_with(conn, "metadata_extraction", "true" if value else "false")
