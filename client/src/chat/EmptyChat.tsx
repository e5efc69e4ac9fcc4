import { useEffect, useState } from "react";
import { documentsApi } from "../api/documents";
import { plural } from "../lib/format";
import { Link } from "../lib/router";
import { Suggestions } from "./Suggestions";

/** How many documents I may read (null until known, or when the request fails: then nothing is said). */
function useDocumentCount(): number | null {
  const [count, setCount] = useState<number | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    documentsApi
      .list({ limit: 1 }, ctl.signal)
      .then((r) => setCount(r.total))
      .catch(() => undefined);
    return () => ctl.abort();
  }, []);
  return count;
}

/** The empty state of a new chat. `onAsk` sends a question (example questions, when offered). */
export function EmptyChat({ onAsk }: { onAsk: (question: string) => void }) {
  const count = useDocumentCount();
  return (
    <div className="center-state empty-chat" data-testid="empty-chat">
      <h2>Chat with your documents</h2>
      <p className="muted">
        Ask a question and ragchat searches your uploaded files, then answers with numbered citations: hover or tap
        one to read its passage.
      </p>
      {count === 0 ? (
        <p className="muted small" data-testid="empty-chat-library" data-count="0">
          No documents yet? <Link to="/documents">Upload some</Link> · Want raw results? Try{" "}
          <Link to="/search">Search</Link>.
        </p>
      ) : count != null ? (
        <p className="muted small" data-testid="empty-chat-library" data-count={count}>
          Searching <Link to="/documents">{plural(count, "document")}</Link> · Want raw results? Try{" "}
          <Link to="/search">Search</Link>.
        </p>
      ) : null}
      <Suggestions onPick={onAsk} />
    </div>
  );
}
