import { useEffect, useId, useRef, useState } from "react";
import { modelsApi, type ChatModels } from "../api/models";
import { preferencesApi, type UserSettings } from "../api/preferences";
import type { ThreadSettings } from "../api/threads";
import type { SearchMode } from "../api/types";
import { Icon } from "../components/Icon";
import { disclosureKeys } from "../lib/disclosure";
import { rerankUnavailable, useHealth } from "../lib/health";
import { Link } from "../lib/router";
import { ScopePicker } from "./ScopePicker";

interface Props {
  settings: ThreadSettings;
  onChange: (next: ThreadSettings) => void;
}

const MODES: { value: SearchMode; label: string; short: string }[] = [
  { value: "hybrid", label: "Hybrid (meaning and words)", short: "Hybrid" },
  { value: "vector", label: "Meaning (vector)", short: "Meaning" },
  { value: "keyword", label: "Words (keyword)", short: "Keyword" },
];
const modeName = (m: string | null | undefined, long = false) => {
  const found = MODES.find((x) => x.value === m);
  return found ? (long ? found.label : found.short) : null;
};

/** Fetched once per page load (and again after a failure). */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | null = null;
  return () => {
    pending ??= load().catch((e: unknown) => {
      pending = null;
      throw e;
    });
    return pending;
  };
}
/** The models the LLM provider offers (GET /api/models). */
const loadModels = once<ChatModels>(() => modelsApi.list());
/** The user's defaults (the Settings page): what "Default" means in each control. */
const loadDefaults = once<UserSettings>(async () => (await preferencesApi.get()).values);

const count = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** The options that differ from the defaults, in a few words ("2 documents · Keyword · Reranked"); "" when none. */
export function optionsSummary(s: ThreadSettings): string {
  const parts: string[] = [];
  if (s.document_ids?.length) parts.push(count(s.document_ids.length, "document"));
  if (s.collection_ids?.length) parts.push(count(s.collection_ids.length, "collection"));
  const mode = modeName(s.search_mode);
  if (mode) parts.push(mode);
  if (s.rerank != null) parts.push(s.rerank ? "Reranked" : "No rerank");
  if (s.documents_only != null) parts.push(s.documents_only ? "Documents only" : "May answer beyond documents");
  if (s.model) parts.push(s.model);
  return parts.join(" · ");
}

/**
 * The per-question search options, collapsed behind one "Options" button next to the message box: what to search
 * (documents, collections), how (mode, rerank), what to do when the documents don't cover the question, and which
 * model answers. "Default" is the user's own default (the Settings page). Saved per thread, sent with each
 * question; when some differ from the defaults a short chip above the box says which.
 */
export function ChatControls({ settings, onChange }: Props) {
  const [open, setOpen] = useState(false);
  const panelId = useId();
  const box = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const summary = optionsSummary(settings);

  const close = (refocus: boolean) => {
    setOpen(false);
    if (refocus) button.current?.focus();
  };

  // Open: the first control takes the focus; a click elsewhere closes it.
  useEffect(() => {
    if (!open) return;
    box.current?.querySelector<HTMLElement>(".options-panel button, .options-panel select, .options-panel input")?.focus();
    const onDown = (e: PointerEvent) => {
      if (!box.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", onDown);
    return () => document.removeEventListener("pointerdown", onDown);
  }, [open]);

  return (
    <>
      {summary && (
        <p className="options-summary">
          <button
            type="button"
            className="chip options-chip"
            onClick={() => setOpen(true)}
            aria-label={`Options changed for this chat: ${summary}. Change them`}
            data-testid="options-summary"
          >
            {summary}
          </button>
        </p>
      )}
      <div
        ref={box}
        className="chat-options"
        {...disclosureKeys(open, close)}
      >
        <button
          ref={button}
          type="button"
          className="btn options-button"
          aria-expanded={open}
          aria-controls={panelId}
          aria-haspopup="dialog"
          onClick={() => setOpen((o) => !o)}
          title="Search options: what to search, how, and which model answers"
          data-testid="options-button"
        >
          <Icon name="sliders" size={18} />
          <span className="options-label">Options</span>
          {summary && <span className="options-dot" aria-hidden="true" />}
        </button>
        {open && <OptionsPanel id={panelId} settings={settings} onChange={onChange} onDone={() => close(true)} />}
      </div>
    </>
  );
}

function OptionsPanel({ id, settings, onChange, onDone }: Props & { id: string; onDone: () => void }) {
  const health = useHealth();
  const rerankReason = rerankUnavailable(health);
  const [models, setModels] = useState<ChatModels | null>(null);
  const [modelsError, setModelsError] = useState<string | null>(null);
  const [defaults, setDefaults] = useState<UserSettings | null>(null);

  useEffect(() => {
    let alive = true;
    loadModels().then(
      (m) => alive && setModels(m),
      (e: unknown) => alive && setModelsError(`The model list is not available: ${e instanceof Error ? e.message : String(e)}`),
    );
    loadDefaults().then(
      (d) => alive && setDefaults(d),
      () => undefined, // "Default" without saying which
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
  const defaultRerank = defaults?.rerank ?? false;
  const rerank = settings.rerank ?? defaultRerank;
  const defaultMode = modeName(defaults?.search_mode, true);
  const defaultModel = defaults?.chat_model ?? models?.default;
  const defaultOnly = defaults ? (defaults.documents_only ? "say so" : "let the model answer") : null;
  const hint = (key: string) => `${id}-${key}`;

  return (
    <div id={id} className="options-panel" role="dialog" aria-label="Search options for this chat" data-testid="chat-controls">
      <div className="option">
        <span className="option-name">Search in</span>
        <ScopePicker
          documentIds={settings.document_ids ?? []}
          collectionIds={settings.collection_ids ?? []}
          onChange={(document_ids, collection_ids) => set({ document_ids, collection_ids })}
        />
      </div>
      <div className="option">
        <label className="option-name" htmlFor={hint("mode-select")}>
          Search by
        </label>
        <select
          id={hint("mode-select")}
          value={mode}
          onChange={(e) => set({ search_mode: (e.target.value || null) as SearchMode | null })}
          aria-describedby={hint("mode")}
          data-testid="chat-mode"
        >
          <option value="">{defaultMode ? `Default: ${defaultMode}` : "Default"}</option>
          {MODES.map((m) => (
            <option key={m.value} value={m.value}>
              {m.label}
            </option>
          ))}
        </select>
        <span id={hint("mode")} className="option-hint">
          Meaning finds passages that say the same in other words; words finds the exact terms; hybrid does both.
        </span>
      </div>
      <div className="option">
        <label className="option-check">
          <input
          type="checkbox"
          checked={!rerankReason && rerank}
          disabled={!!rerankReason}
          aria-describedby={hint("rerank")}
          onChange={(e) => set({ rerank: e.target.checked === defaultRerank ? null : e.target.checked })}
          data-testid="chat-rerank"
          />
          <span className="option-name">Rerank</span>
        </label>
        <span id={hint("rerank")} className="option-hint">
          {rerankReason ??
            `The language model re-reads the passages found and puts the best first (slow with a small local model; default ${defaultRerank ? "on" : "off"}).`}
        </span>
      </div>
      <div className="option">
        <label className="option-name" htmlFor={hint("only-select")}>
          Not in documents
        </label>
        <select
          id={hint("only-select")}
          value={settings.documents_only == null ? "" : settings.documents_only ? "refuse" : "answer"}
          onChange={(e) => set({ documents_only: e.target.value === "" ? null : e.target.value === "refuse" })}
          aria-describedby={hint("only")}
          data-testid="chat-documents-only"
        >
          <option value="">{defaultOnly ? `Default: ${defaultOnly}` : "Default"}</option>
          <option value="refuse">Say so, don't answer</option>
          <option value="answer">Let the model answer</option>
        </select>
        <span id={hint("only")} className="option-hint">
          What to do when nothing in the documents matches the question well enough.
        </span>
      </div>
      <div className="option" title={modelsError ?? undefined}>
        <label className="option-name" htmlFor={hint("model-select")}>
          Model
        </label>
        <select
          id={hint("model-select")}
          value={model} disabled={!models && !model} onChange={(e) => set({ model: e.target.value || null })} data-testid="chat-model">
          <option value="">{defaultModel ? `Default (${defaultModel})` : modelsError ? "Default (list unavailable)" : "Default"}</option>
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </div>
      <p className="options-foot small">
        <span className="muted">
          Saved with this chat. Your defaults are in <Link to="/settings">Settings</Link>.
        </span>
        <button type="button" className="btn btn-small" onClick={onDone} data-testid="options-done">
          Done
        </button>
      </p>
    </div>
  );
}
