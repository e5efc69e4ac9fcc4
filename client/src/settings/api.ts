import { json, request } from "../api/client";

/** GET/PUT /api/settings and GET /api/models (docs/API.md "Settings"). */

export type Theme = "light" | "dark" | "system";
export type SearchModeName = "hybrid" | "vector" | "keyword";
export type ChunkStrategy = "auto" | "line" | "sentence" | "semantic";

export interface UserSettings {
  chat_model: string;
  search_mode: SearchModeName;
  rerank: boolean;
  chunk_strategy: ChunkStrategy;
  metadata_extraction: boolean;
  theme: Theme;
}

export interface SettingsView {
  values: UserSettings;
  defaults: UserSettings;
  restart_required: string[];
}

export interface ChatModelInfo {
  name: string;
  size?: number | null;
  family?: string | null;
}

export interface ChatModels {
  models: ChatModelInfo[];
  default: string;
  provider: "ollama" | "openai";
}

/** Fields sent change; `null` puts one back to the environment's default. */
export type SettingsPatch = { [K in keyof UserSettings]?: UserSettings[K] | null };

export const settingsApi = {
  get: (signal?: AbortSignal) => request<SettingsView>("/api/settings", { signal }),
  put: (patch: SettingsPatch) => request<SettingsView>("/api/settings", json("PUT", patch)),
  models: (signal?: AbortSignal) => request<ChatModels>("/api/models", { signal }),
};
