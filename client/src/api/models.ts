// The chat models the user may pick (GET /api/models): the chat's model menu and the settings page.
import { get } from "./client";
import type { components } from "./schema";

export type ChatModel = components["schemas"]["ChatModel"];
export type ChatModels = components["schemas"]["ChatModels"];

export const modelsApi = {
  list: (signal?: AbortSignal) => get("/api/models", { signal }),
};
