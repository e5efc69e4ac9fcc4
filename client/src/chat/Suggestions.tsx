import { useEffect, useState } from "react";
import { suggestionsApi, type SuggestedQuestion } from "../api/suggestions";
import "../settings/settings.css";

/**
 * Example questions for an empty chat, drawn by the server from the user's own documents (GET /api/suggestions,
 * no LLM call). Clicking one hands its text to `onPick` (the chat page sends it). Nothing is shown while they
 * load, when the library is empty, or when the request fails: the empty state stays as it is.
 */
export function Suggestions({ onPick, limit = 4 }: { onPick: (question: string) => void; limit?: number }) {
  const [questions, setQuestions] = useState<SuggestedQuestion[]>([]);

  useEffect(() => {
    const ctl = new AbortController();
    suggestionsApi
      .list(limit, ctl.signal)
      .then(setQuestions)
      .catch(() => {
        /* suggestions are optional */
      });
    return () => ctl.abort();
  }, [limit]);

  if (!questions.length) return null;
  return (
    <section className="suggestions" aria-labelledby="suggestions-title" data-testid="suggestions">
      <h2 id="suggestions-title">Try asking</h2>
      <ul className="suggestion-list">
        {questions.map((q) => (
          <li key={q.text}>
            <button
              type="button"
              className="suggestion"
              title={`From ${q.document_title}`}
              onClick={() => onPick(q.text)}
              data-testid="suggestion"
            >
              {q.text}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
