// The signed-in user's preferences (docs/API.md "Settings"): /api/preferences (the server keeps the older
// /api/settings as an alias for API tokens and scripts written against it).
import { get, put, type JsonBody } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

export type UserSettings = Schemas["PreferenceValues"];
export type Theme = UserSettings["theme"];
export type SearchModeName = UserSettings["search_mode"];
export type ChunkStrategy = UserSettings["chunk_strategy"];
export type SettingsView = Schemas["PreferencesView"];
/** Fields sent change; `null` puts one back to the environment's default. */
export type SettingsPatch = JsonBody<"/api/preferences", "put">;

export const preferencesApi = {
  get: (signal?: AbortSignal) => get("/api/preferences", { signal }),
  put: (body: SettingsPatch) => put("/api/preferences", { body }),
};
