"""GET and PUT /api/settings: the signed-in user's settings, their defaults, and which need a restart."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get, put

from ragchat.core.http import error_responses
from ragchat.core.principal import Principal
from ragchat.preferences.schemas import SettingsPatch, SettingsView
from ragchat.preferences.service import PreferencesService


class SettingsController(Controller):
    path = "/api/settings"

    @get("/")
    async def get_settings(self, preferences: PreferencesService, principal: Principal) -> SettingsView:
        """Your settings (`values`), the environment's (`defaults`), and those that need a restart."""
        return await preferences.view(principal)

    @put("/", responses=error_responses(400))
    async def put_settings(
        self, data: SettingsPatch, preferences: PreferencesService, principal: Principal
    ) -> SettingsView:
        """Change some settings: the fields sent change, `null` puts one back to its default."""
        return await preferences.update(principal, data)


def settings_handlers() -> list[Any]:
    return [SettingsController]
