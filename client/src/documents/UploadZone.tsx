import { useRef, useState, type DragEvent } from "react";
import { Icon } from "../components/Icon";
import { metadataField } from "./MetadataEditor";
import type { ChunkStrategy } from "../api/documents";
import { CHUNK_STRATEGIES } from "./RechunkAction";

import { ACCEPT } from "./formats";

export { ACCEPT };

export function UploadZone({
  busy,
  onFiles,
}: {
  busy: boolean;
  /** `fields`: extra form fields for every file (`metadata`, as JSON). */
  onFiles: (files: File[], fields?: Record<string, string>) => void;
}) {
  const input = useRef<HTMLInputElement>(null);
  const [meta, setMeta] = useState("");
  const fields = metadataField(meta); // a string: what is wrong with the text (nothing is sent)
  const [chunk, setChunk] = useState<ChunkStrategy | "">(""); // "": the Settings page's / server's default
  const send = (files: File[]) => {
    if (typeof fields !== "string") onFiles(files, chunk ? { ...fields, chunk_strategy: chunk } : fields);
  };
  const [over, setOver] = useState(false);
  const depth = useRef(0);

  const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes("Files");

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    depth.current = 0;
    setOver(false);
    const files = Array.from(e.dataTransfer?.files ?? []);
    if (files.length && !busy) send(files);
  };

  return (
    <div
      className={`dropzone${over ? " over" : ""}`}
      data-testid="upload-dropzone"
      onDragEnter={(e) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        depth.current++;
        setOver(true);
      }}
      onDragOver={(e) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        e.dataTransfer.dropEffect = "copy";
      }}
      onDragLeave={() => {
        depth.current = Math.max(0, depth.current - 1);
        if (depth.current === 0) setOver(false);
      }}
      onDrop={onDrop}
    >
      <Icon name="upload" size={28} />
      <p>
        <strong>Drop files here</strong> or{" "}
        <button type="button" className="link-button" onClick={() => input.current?.click()} disabled={busy} data-testid="upload-button">
          choose files
        </button>
      </p>
      <p className="muted small">PDF, DOCX, Markdown, HTML, text, VTT/SRT, CSV/XLSX, PPTX, EPUB or a JSONL corpus · several at once</p>
      <div className="upload-meta small">
        <label htmlFor="upload-metadata" className="muted">
          Metadata for these files (optional)
        </label>{" "}
        <input
          id="upload-metadata"
          type="text"
          placeholder="subject=Polity, subject=History, year=2024"
          value={meta}
          onChange={(e) => setMeta(e.target.value)}
          aria-invalid={typeof fields === "string"}
          data-testid="upload-metadata"
        />
        {typeof fields === "string" && (
          <span className="error-text" role="alert" data-testid="upload-metadata-error">
            {" "}
            {fields}
          </span>
        )}
      </div>
      <div className="upload-meta small">
        <label htmlFor="upload-chunking" className="muted">
          Chunking
        </label>{" "}
        <select
          id="upload-chunking"
          value={chunk}
          onChange={(e) => setChunk(e.target.value as ChunkStrategy | "")}
          data-testid="upload-chunking"
        >
          <option value="">Default</option>
          {CHUNK_STRATEGIES.map((s) => (
            <option key={s.value} value={s.value}>
              {s.label}
            </option>
          ))}
        </select>
      </div>
      <input
        ref={input}
        type="file"
        multiple
        accept={ACCEPT}
        className="sr-only"
        tabIndex={-1}
        aria-label="Upload documents"
        data-testid="upload-input"
        onChange={(e) => {
          const files = Array.from(e.target.files ?? []);
          e.target.value = "";
          if (files.length) send(files);
        }}
      />
    </div>
  );
}
