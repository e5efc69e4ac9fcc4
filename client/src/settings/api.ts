import { json, request } from "../api/client";
import type { components } from "../api/schema";

/** GET/PUT /api/settings and GET /api/models (docs/API.md "Settings"). */

type Schemas = components["schemas"];

export type UserSettings = Schemas["PreferenceValues"];
export type Theme = UserSettings["theme"];
export type SearchModeName = UserSettings["search_mode"];
export type ChunkStrategy = UserSettings["chunk_strategy"];
export type SettingsView = Schemas["PreferencesView"];
export type ChatModelInfo = Schemas["ChatModel"];
export type ChatModels = Schemas["ChatModels"];

/** Fields sent change; `null` puts one back to the environment's default. */
export type SettingsPatch = { [K in keyof UserSettings]?: UserSettings[K] | null };

export const settingsApi = {
  get: (signal?: AbortSignal) => request<SettingsView>("/api/settings", { signal }),
  put: (patch: SettingsPatch) => request<SettingsView>("/api/settings", json("PUT", patch)),
  models: (signal?: AbortSignal) => request<ChatModels>("/api/models", { signal }),
};
