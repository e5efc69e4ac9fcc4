// Example questions for an empty chat, drawn from the user's own documents (GET /api/suggestions, no LLM call).
import { get } from "./client";
import type { components } from "./schema";

export type SuggestedQuestion = components["schemas"]["SuggestedQuestion"];

export const suggestionsApi = {
  list: async (limit: number, signal?: AbortSignal) =>
    (await get("/api/suggestions", { params: { query: { limit } }, signal })).questions,
};
