import { useEffect, useState } from "react";
import { modelsApi, type ChatModels } from "../api/models";
import type { ThreadSettings } from "../api/threads";
import type { SearchMode } from "../api/types";
import { rerankUnavailable, useHealth } from "../lib/health";
import { ScopePicker } from "./ScopePicker";

interface Props {
  settings: ThreadSettings;
  onChange: (next: ThreadSettings) => void;
}

const MODES: { value: SearchMode; label: string }[] = [
  { value: "hybrid", label: "Hybrid" },
  { value: "vector", label: "Vector" },
  { value: "keyword", label: "Keyword" },
];

/** The models the LLM provider offers (GET /api/models), fetched once per page load. */
let modelsOnce: Promise<ChatModels> | null = null;
function loadModels(): Promise<ChatModels> {
  modelsOnce ??= modelsApi.list().catch((e: unknown) => {
    modelsOnce = null; // try again next time
    throw e;
  });
  return modelsOnce;
}

/**
 * The retrieval settings of a chat, above the composer: what to search (documents, collections), how
 * (mode, rerank) and which model answers. Saved per thread and sent with each question.
 */
export function ChatControls({ settings, onChange }: Props) {
  const health = useHealth();
  const rerankReason = rerankUnavailable(health);
  const [models, setModels] = useState<ChatModels | null>(null);
  const [modelsError, setModelsError] = useState<string | null>(null);

  useEffect(() => {
    let alive = true;
    loadModels().then(
      (m) => alive && setModels(m),
      (e: unknown) => alive && setModelsError(`The model list is not available: ${e instanceof Error ? e.message : String(e)}`),
    );
    return () => {
      alive = false;
    };
  }, []);

  const set = (patch: ThreadSettings) => onChange({ ...settings, ...patch });
  const mode = settings.search_mode ?? "";
  const model = settings.model ?? "";
  const names = models?.models.map((m) => m.name) ?? [];
  if (model && !names.includes(model)) names.unshift(model);

  return (
    <div className="chat-controls" data-testid="chat-controls" role="group" aria-label="Retrieval settings">
      <ScopePicker
        documentIds={settings.document_ids ?? []}
        collectionIds={settings.collection_ids ?? []}
        onChange={(document_ids, collection_ids) => set({ document_ids, collection_ids })}
      />
      <label className="control small">
        <span className="muted">Mode</span>
        <select
          value={mode}
          onChange={(e) => set({ search_mode: (e.target.value || null) as SearchMode | null })}
          data-testid="chat-mode"
        >
          <option value="">Default</option>
          {MODES.map((m) => (
            <option key={m.value} value={m.value}>
              {m.label}
            </option>
          ))}
        </select>
      </label>
      <label className="control small" title={rerankReason ?? "Re-order the passages with the language model (slow with a small local model)"}>
        <input
          type="checkbox"
          checked={!rerankReason && settings.rerank === true}
          disabled={!!rerankReason}
          aria-describedby={rerankReason ? "chat-rerank-reason" : undefined}
          onChange={(e) => set({ rerank: e.target.checked })}
          data-testid="chat-rerank"
        />
        <span>Rerank</span>
        {rerankReason && (
          <span id="chat-rerank-reason" className="sr-only">
            {rerankReason}
          </span>
        )}
      </label>
      <label className="control small" title="When nothing in the documents matches the question well enough">
        <span className="muted">Not in documents</span>
        <select
          value={settings.documents_only == null ? "" : settings.documents_only ? "refuse" : "answer"}
          onChange={(e) => set({ documents_only: e.target.value === "" ? null : e.target.value === "refuse" })}
          data-testid="chat-documents-only"
        >
          <option value="">Default</option>
          <option value="refuse">Say so, don't answer</option>
          <option value="answer">Let the model answer</option>
        </select>
      </label>
      <label className="control small" title={modelsError ?? undefined}>
        <span className="muted">Model</span>
        <select
          value={model}
          disabled={!models && !model}
          onChange={(e) => set({ model: e.target.value || null })}
          data-testid="chat-model"
        >
          <option value="">{models ? `Default (${models.default})` : modelsError ? "Default (list unavailable)" : "Default"}</option>
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}
