// The signed-in user's preferences (docs/API.md "Settings"). The server serves them as /api/preferences and,
// the same, as the older /api/settings, which this client has always called (kept: the routes it sends do not
// change).
import { get, put, type JsonBody } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

export type UserSettings = Schemas["PreferenceValues"];
export type Theme = UserSettings["theme"];
export type SearchModeName = UserSettings["search_mode"];
export type ChunkStrategy = UserSettings["chunk_strategy"];
export type SettingsView = Schemas["PreferencesView"];
/** Fields sent change; `null` puts one back to the environment's default. */
export type SettingsPatch = JsonBody<"/api/settings", "put">;

export const preferencesApi = {
  get: (signal?: AbortSignal) => get("/api/settings", { signal }),
  put: (body: SettingsPatch) => put("/api/settings", { body }),
};
