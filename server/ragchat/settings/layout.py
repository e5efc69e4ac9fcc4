"""The groups of the settings, and the environment variable names that set each group's fields (flat, as
they have always been: SEARCH_MODE sets `retrieval.search_mode`)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import AliasChoices
from pydantic.fields import FieldInfo

from ragchat.settings.group import Group
from ragchat.settings.models import EmbeddingSettings, LLMSettings, RetrievalSettings
from ragchat.settings.serving import AccountSettings, AuditSettings, LimitSettings, OidcSettings, ServerSettings
from ragchat.settings.storage import DatabaseSettings, IngestionSettings

#: `Settings.<group>` → its model
GROUPS: dict[str, type[Group]] = {
    "server": ServerSettings,
    "database": DatabaseSettings,
    "llm": LLMSettings,
    "embeddings": EmbeddingSettings,
    "retrieval": RetrievalSettings,
    "ingestion": IngestionSettings,
    "accounts": AccountSettings,
    "oidc": OidcSettings,
    "limits": LimitSettings,
    "audit": AuditSettings,
}


def group_fields() -> Iterator[tuple[str, str, FieldInfo]]:
    """(group, field, info) for every setting."""
    for group, model in GROUPS.items():
        for name, info in model.model_fields.items():
            yield group, name, info


def env_names(info: FieldInfo, field: str) -> list[str]:
    """The environment variable names of one field, upper case: its own name, then its aliases."""
    alias = info.validation_alias
    choices = alias.choices if isinstance(alias, AliasChoices) else [alias] if alias else []
    return list(dict.fromkeys([field.upper(), *(c.upper() for c in choices if isinstance(c, str))]))


#: every environment variable name (upper case) → (group, field) it sets
WHERE: dict[str, tuple[str, str]] = {
    name: (group, field) for group, field, info in group_fields() for name in env_names(info, field)
}
