import { Link } from "../lib/router";
import { Suggestions } from "./Suggestions";

/** The empty state of a new chat. `onAsk` sends a question (example questions, when offered). */
export function EmptyChat({ onAsk }: { onAsk: (question: string) => void }) {
  return (
    <div className="center-state empty-chat" data-testid="empty-chat">
      <h2>Chat with your documents</h2>
      <p className="muted">
        Ask a question and ragchat searches your uploaded files, then answers with numbered citations: hover or tap
        one to read its passage.
      </p>
      <p className="muted small">
        No documents yet? <Link to="/documents">Upload some</Link> · Want raw results? Try{" "}
        <Link to="/search">Search</Link>.
      </p>
      <Suggestions onPick={onAsk} />
    </div>
  );
}
