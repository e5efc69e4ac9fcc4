import { useState, type FormEvent } from "react";

/** "Add a web page": the server fetches it (with its SSRF guard) and queues it like an upload. */
export function UrlForm({ busy, onUrl }: { busy: boolean; onUrl: (url: string) => Promise<boolean> }) {
  const [url, setUrl] = useState("");
  const [sending, setSending] = useState(false);
  const valid = /^https?:\/\/\S+$/i.test(url.trim());

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!valid || sending) return;
    setSending(true);
    try {
      if (await onUrl(url.trim())) setUrl(""); // a refused URL stays in the box to be corrected
    } finally {
      setSending(false);
    }
  };

  return (
    <form className="url-form" onSubmit={submit} data-testid="url-form">
      <label htmlFor="ingest-url" className="small">
        Or add a web page
      </label>
      <div className="url-row">
        <input
          id="ingest-url"
          type="url"
          inputMode="url"
          placeholder="https://example.com/article"
          value={url}
          maxLength={2048}
          onChange={(e) => setUrl(e.target.value)}
          data-testid="url-input"
        />
        <button type="submit" className="btn btn-small" disabled={busy || sending || !valid} data-testid="url-submit">
          {sending ? "Fetching…" : "Add page"}
        </button>
      </div>
    </form>
  );
}
