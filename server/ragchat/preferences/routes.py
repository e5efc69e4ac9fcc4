"""GET and PUT /api/preferences: the signed-in user's preferences, their defaults, and which need a restart.

`/api/settings` is the same, kept for API tokens and scripts written before the rename (deprecated: the web
client calls /api/preferences)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get, put

from ragchat.core.principal import Principal
from ragchat.httpapi.http import error_responses
from ragchat.preferences.schemas import PreferencesPatch, PreferencesView
from ragchat.preferences.service import PreferencesService


class PreferencesController(Controller):
    path = "/api/preferences"

    @get("/")
    async def get_preferences(self, preferences: PreferencesService, principal: Principal) -> PreferencesView:
        """Your preferences (`values`), the environment's (`defaults`), and those that need a restart."""
        return await preferences.view(principal)

    @put("/", responses=error_responses(400))
    async def put_preferences(
        self, data: PreferencesPatch, preferences: PreferencesService, principal: Principal
    ) -> PreferencesView:
        """Change some preferences: the fields sent change, `null` puts one back to its default."""
        return await preferences.update(principal, data)


class SettingsAlias(Controller):
    """The old name of /api/preferences (the web client's Settings page calls it)."""

    path = "/api/settings"

    @get("/", deprecated=True)
    async def get_settings(self, preferences: PreferencesService, principal: Principal) -> PreferencesView:
        """GET /api/preferences (the old name)."""
        return await preferences.view(principal)

    @put("/", responses=error_responses(400), deprecated=True)
    async def put_settings(
        self, data: PreferencesPatch, preferences: PreferencesService, principal: Principal
    ) -> PreferencesView:
        """PUT /api/preferences (the old name)."""
        return await preferences.update(principal, data)


def preferences_handlers() -> list[Any]:
    return [PreferencesController, SettingsAlias]
