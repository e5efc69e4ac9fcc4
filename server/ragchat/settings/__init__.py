"""Every setting in one place, read once from the environment (and `.env`) and passed down by group.

`Settings` holds one model per group (`settings.retrieval.search_mode`, `settings.llm.chat_model`…); the
composition root (`ragchat.runtime`, the app factory, the CLI) is the only code that sees the whole object, and
gives each service its group. The environment variable names are flat, as they have always been (SEARCH_MODE,
CHAT_MODEL): they are read against `Environment`, every group's fields side by side, and regrouped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from ragchat.core.search import Fusion, QueryExpansion, SearchMode, SearchModeName
from ragchat.settings.group import Group
from ragchat.settings.layout import GROUPS, WHERE, env_names, group_fields
from ragchat.settings.models import EmbeddingSettings, EmbedProvider, LLMProviderName, LLMSettings, RetrievalSettings
from ragchat.settings.names import OTHER_VARIABLES, setting_names, unknown_settings, warn_unknown_settings
from ragchat.settings.serving import (
    AccountSettings,
    AuditSettings,
    LimitSettings,
    OidcSettings,
    ServerSettings,
    is_loopback,
)
from ragchat.settings.storage import (
    ENGINE_DEFAULT_MB,
    DatabaseSettings,
    IngestionSettings,
    check_read_urls,
    parse_size_mb,
    split_urls,
)

__all__ = [
    "ENGINE_DEFAULT_MB",
    "GROUPS",
    "OTHER_VARIABLES",
    "AccountSettings",
    "AuditSettings",
    "DatabaseSettings",
    "EmbedProvider",
    "EmbeddingSettings",
    "Environment",
    "Fusion",
    "Group",
    "IngestionSettings",
    "LLMProviderName",
    "LLMSettings",
    "LimitSettings",
    "OidcSettings",
    "QueryExpansion",
    "RetrievalSettings",
    "SearchMode",
    "SearchModeName",
    "ServerSettings",
    "Settings",
    "check_read_urls",
    "env_names",
    "group_fields",
    "is_loopback",
    "parse_size_mb",
    "regroup",
    "setting_names",
    "split_urls",
    "unknown_settings",
    "warn_unknown_settings",
]

_CONFIG = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)


# BaseSettings narrows BaseModel's `model_config` type; the groups keep BaseModel's (nothing else differs)
class Environment(  # pyright: ignore[reportIncompatibleVariableOverride]
    BaseSettings,
    ServerSettings,
    DatabaseSettings,
    LLMSettings,
    EmbeddingSettings,
    RetrievalSettings,
    IngestionSettings,
    AccountSettings,
    OidcSettings,
    LimitSettings,
    AuditSettings,
):
    """The environment's names, flat: every group's fields side by side. Only read by the sources of
    `Settings` (which fields, which names and aliases, which values are lists); never built or passed."""

    model_config = _CONFIG


def regroup(values: Mapping[str, Any]) -> dict[str, Any]:
    """Flat names (a field's or an environment variable's, any case) → `{group: {field: value}}`; a group given
    whole is kept, its flat fields laid over it; names of no setting are left as they are (and ignored)."""
    out: dict[str, Any] = {}
    flat: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        where = WHERE.get(key.upper()) if key not in GROUPS else None
        if where is None:
            out[key] = value
        else:
            flat.setdefault(where[0], {})[where[1]] = value
    for group, fields in flat.items():
        given = out.get(group)
        if isinstance(given, Group):
            out[group] = given.model_copy(update=fields)
        else:
            out[group] = {**(given or {}), **fields}
    return out


class _Regrouped(PydanticBaseSettingsSource):
    """A source read with the flat names of `Environment`, handed to `Settings` in groups."""

    def __init__(self, settings_cls: type[BaseSettings], flat: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        self._flat = flat

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the flat source whole

    def __call__(self) -> dict[str, Any]:
        return regroup(self._flat())


class Settings(BaseSettings):
    """Environment variables (case-insensitive). `.env.example` lists them all with defaults.

    One model per group; a service takes its group's class and is given `settings.<group>`. Built with flat
    names too (`Settings(search_mode="keyword")`, `settings.model_copy(update={"fusion": "rrf"})`), as the
    environment names them."""

    model_config = _CONFIG

    server: ServerSettings = Field(default_factory=ServerSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    ingestion: IngestionSettings = Field(default_factory=IngestionSettings)
    accounts: AccountSettings = Field(default_factory=AccountSettings)
    oidc: OidcSettings = Field(default_factory=OidcSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The process environment over `.env` (`_env_file=` chooses another file, None none), both read with
        the flat names; arguments over both."""
        env_file = dotenv_settings.env_file if isinstance(dotenv_settings, DotEnvSettingsSource) else None
        return (
            init_settings,
            _Regrouped(settings_cls, EnvSettingsSource(Environment)),
            _Regrouped(settings_cls, DotEnvSettingsSource(Environment, env_file=env_file)),
        )

    @model_validator(mode="before")
    @classmethod
    def _regroup(cls, data: Any) -> Any:
        return regroup(data) if isinstance(data, Mapping) else data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` laid over it: a group by its name, or a setting by its flat name (fusion=…);
        a name that is neither is a KeyError (an update that would change nothing)."""
        grouped = regroup(update or {})
        unknown = set(grouped) - set(GROUPS)
        if unknown:
            raise KeyError(f"not a setting: {', '.join(sorted(unknown))}")
        groups = {
            name: getattr(self, name).model_copy(update=value) if isinstance(value, Mapping) else value
            for name, value in grouped.items()
        }
        return super().model_copy(update=groups, deep=deep)
