// An answer's rating and note: PUT /api/messages/{id}/feedback.
import { put } from "./client";
import type { components } from "./schema";

export type Feedback = components["schemas"]["Feedback"];
export type Rating = NonNullable<Feedback["rating"]>;

export const feedbackApi = {
  put: (messageId: string, rating: Rating | null, note: string | null) =>
    put("/api/messages/{message_id}/feedback", { params: { path: { message_id: messageId } }, body: { rating, note } }),
};
