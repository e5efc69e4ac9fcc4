import { useEffect, useState, type FormEvent, type ReactNode } from "react";
import { errorMessage } from "../api/client";
import { Spinner } from "../components/Spinner";
import { useTitle } from "../lib/useTitle";
import { modelsApi, type ChatModels } from "../api/models";
import { searchApi, type RerankCost } from "../api/search";
import {
  preferencesApi,
  type ChunkStrategy,
  type SearchModeName,
  type SettingsPatch,
  type SettingsView,
  type Theme,
  type UserSettings,
} from "../api/preferences";
import { applyTheme } from "./theme";
import "./settings.css";

const MODES: { value: SearchModeName; label: string }[] = [
  { value: "hybrid", label: "Hybrid (meaning + keywords)" },
  { value: "vector", label: "Vector (meaning)" },
  { value: "keyword", label: "Keyword" },
];
const STRATEGIES: { value: ChunkStrategy; label: string }[] = [
  { value: "auto", label: "Automatic (by document type)" },
  { value: "sentence", label: "Sentences" },
  { value: "line", label: "Lines (tables, receipts)" },
  { value: "semantic", label: "Semantic (topic shifts)" },
];
const THEMES: { value: Theme; label: string }[] = [
  { value: "system", label: "System" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];
/** The environment variable that gives each default. */
const ENV: Record<keyof UserSettings, string | null> = {
  chat_model: "CHAT_MODEL",
  search_mode: "SEARCH_MODE",
  rerank: "RERANK_ENABLED",
  chunk_strategy: "CHUNK_STRATEGY",
  metadata_extraction: "METADATA_EXTRACTION",
  documents_only: "CHAT_DOCUMENTS_ONLY",
  theme: null,
};
type FormValues = Omit<UserSettings, "theme">;
const FORM_KEYS: (keyof FormValues)[] = ["chat_model", "search_mode", "rerank", "chunk_strategy", "metadata_extraction", "documents_only"];

const shown = (value: unknown) => (typeof value === "boolean" ? (value ? "on" : "off") : String(value));

/** What rerank costs a chat search on this server, from the model's measured speed (GET /api/search/rerank-cost). */
export function rerankCostText(cost: RerankCost | null): string {
  if (!cost) return "";
  if (cost.provider === "http") return "A cross-encoder server reranks (RERANK_PROVIDER=http).";
  const calls = `${cost.calls} LLM ${cost.calls === 1 ? "call" : "calls"} a chat search`;
  if (cost.seconds == null) return `Rerank makes ${calls}; its time shows here once ${cost.model ?? "the model"} has answered a question.`;
  const seconds = cost.seconds < 90 ? `${Math.max(1, Math.round(cost.seconds))} s` : `${Math.round(cost.seconds / 60)} min`;
  return `At ${cost.model ?? "the model"}'s measured speed, rerank adds about ${seconds} to a chat search (${calls}).`;
}

export function SettingsPage() {
  useTitle("Settings");
  const [view, setView] = useState<SettingsView | null>(null);
  const [form, setForm] = useState<FormValues | null>(null);
  const [theme, setTheme] = useState<Theme>("system");
  const [models, setModels] = useState<ChatModels | null>(null);
  const [rerankCost, setRerankCost] = useState<RerankCost | null>(null);
  const [modelsError, setModelsError] = useState<string | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);

  const take = (next: SettingsView) => {
    setView(next);
    const { theme, ...rest } = next.values;
    setForm(rest);
    setTheme(theme);
    applyTheme(theme);
  };

  useEffect(() => {
    const ctl = new AbortController();
    preferencesApi
      .get(ctl.signal)
      .then(take)
      .catch((e) => !ctl.signal.aborted && setLoadError(errorMessage(e)));
    modelsApi
      .list(ctl.signal)
      .then(setModels)
      .catch((e) => !ctl.signal.aborted && setModelsError(errorMessage(e)));
    searchApi
      .rerankCost(ctl.signal)
      .then(setRerankCost)
      .catch(() => undefined); // the hint then says only what was measured on the benchmarks
    return () => ctl.abort();
  }, []);

  if (loadError)
    return (
      <div className="page">
        <h1>Settings</h1>
        <div className="error-box" role="alert" data-testid="settings-error">
          <div className="error-text">{loadError}</div>
        </div>
      </div>
    );
  if (!view || !form)
    return (
      <div className="page center-state">
        <Spinner label="Loading settings" />
      </div>
    );

  const changed = FORM_KEYS.filter((k) => form[k] !== view.values[k]);
  const set = <K extends keyof FormValues>(key: K, value: FormValues[K]) => {
    setForm({ ...form, [key]: value });
    setResult(null);
  };

  const send = async (patch: SettingsPatch, done: string) => {
    setBusy(true);
    setResult(null);
    try {
      take(await preferencesApi.put(patch));
      setResult({ ok: true, text: done });
    } catch (e) {
      setResult({ ok: false, text: errorMessage(e) });
    } finally {
      setBusy(false);
    }
  };

  const save = (e: FormEvent) => {
    e.preventDefault();
    if (busy || !changed.length) return;
    const model = form.chat_model.trim();
    if (!model) {
      setResult({ ok: false, text: "Enter a chat model name." });
      return;
    }
    const patch: SettingsPatch = {};
    for (const k of changed) Object.assign(patch, { [k]: k === "chat_model" ? model : form[k] });
    void send(patch, "Saved. The next answer and upload use these settings.");
  };

  const chooseTheme = (next: Theme) => {
    setTheme(next);
    applyTheme(next); // at once; saved for the next visit and other browsers
    void send({ theme: next }, `Theme: ${next}.`);
  };

  const resetAll = () => {
    const patch: SettingsPatch = {};
    for (const k of FORM_KEYS) Object.assign(patch, { [k]: null });
    void send(patch, "Back to the server's defaults.");
  };

  const names = models?.models.map((m) => m.name) ?? [];
  const modelChoices = names.includes(form.chat_model) ? names : [form.chat_model, ...names];

  const row = (key: keyof UserSettings, id: string, label: string, control: ReactNode, hint?: string) => (
    <div className="field settings-field" key={key}>
      <label htmlFor={id}>
        {label}
        {view.restart_required.includes(key) && <span className="badge settings-restart">needs restart</span>}
      </label>
      {control}
      <p id={`${id}-hint`} className="field-hint muted small" data-testid={`default-${key}`}>
        {hint ? `${hint} ` : ""}Default: {shown(view.defaults[key])}
        {ENV[key] ? ` (${ENV[key]})` : ""}.
      </p>
    </div>
  );

  return (
    <div className="page" data-testid="settings-page">
      <header className="page-header">
        <h1>Settings</h1>
        <p className="muted">Your own choices. The server's environment gives the defaults.</p>
      </header>

      <form className="card stack-form settings-form" onSubmit={save} aria-labelledby="settings-answers" noValidate>
        <h2 id="settings-answers">Answers and documents</h2>
        {row(
          "chat_model",
          "set-model",
          "Chat model",
          models && !modelsError ? (
            <select
              id="set-model"
              value={form.chat_model}
              onChange={(e) => set("chat_model", e.target.value)}
              aria-describedby="set-model-hint"
              data-testid="set-model"
            >
              {modelChoices.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          ) : (
            <input
              id="set-model"
              value={form.chat_model}
              maxLength={200}
              onChange={(e) => set("chat_model", e.target.value)}
              aria-describedby="set-model-hint"
              data-testid="set-model"
            />
          ),
          modelsError ? `The model list is unavailable (${modelsError.replace(/\.$/, "")}): type a name.` : undefined,
        )}
        {row(
          "search_mode",
          "set-mode",
          "Default search mode",
          <select
            id="set-mode"
            value={form.search_mode}
            onChange={(e) => set("search_mode", e.target.value as SearchModeName)}
            aria-describedby="set-mode-hint"
            data-testid="set-mode"
          >
            {MODES.map((m) => (
              <option key={m.value} value={m.value}>
                {m.label}
              </option>
            ))}
          </select>,
        )}
        <Check
          id="set-rerank"
          label="Rerank search results with the LLM"
          checked={form.rerank}
          onChange={(v) => set("rerank", v)}
          hint={
            `${rerankCostText(rerankCost)} Default: ${shown(view.defaults.rerank)} (RERANK_ENABLED). Worth it with a ` +
            "GPU, a hosted model or a cross-encoder server: a 1.5B model on 2 CPU cores mostly kept the search order."
          }
        />
        {row(
          "chunk_strategy",
          "set-chunking",
          "Chunking of new uploads",
          <select
            id="set-chunking"
            value={form.chunk_strategy}
            onChange={(e) => set("chunk_strategy", e.target.value as ChunkStrategy)}
            aria-describedby="set-chunking-hint"
            data-testid="set-chunking"
          >
            {STRATEGIES.map((m) => (
              <option key={m.value} value={m.value}>
                {m.label}
              </option>
            ))}
          </select>,
        )}
        <Check
          id="set-metadata"
          label="Extract metadata (title, topics, dates) from new documents with the LLM"
          checked={form.metadata_extraction}
          onChange={(v) => set("metadata_extraction", v)}
          hint={`Default: ${shown(view.defaults.metadata_extraction)} (METADATA_EXTRACTION).`}
        />
        <Check
          id="set-documents-only"
          label="Answer only from my documents: when nothing matches, say so instead of answering from the model's own knowledge"
          checked={form.documents_only}
          onChange={(v) => set("documents_only", v)}
          hint={`Default: ${shown(view.defaults.documents_only)} (CHAT_DOCUMENTS_ONLY). A conversation may override it.`}
        />
        <div className="form-row">
          <button type="submit" className="btn btn-primary" disabled={busy || !changed.length} data-testid="settings-save">
            Save
          </button>
          <button type="button" className="btn" disabled={busy} onClick={resetAll} data-testid="settings-reset">
            Reset to defaults
          </button>
        </div>
      </form>

      <section className="card settings-card" aria-labelledby="settings-look">
        <h2 id="settings-look">Appearance</h2>
        <fieldset className="settings-themes" data-testid="set-theme">
          <legend>Theme</legend>
          {THEMES.map((t) => (
            <label key={t.value} className="checkbox">
              <input
                type="radio"
                name="theme"
                value={t.value}
                checked={theme === t.value}
                onChange={() => chooseTheme(t.value)}
                data-testid={`theme-${t.value}`}
              />
              {t.label}
            </label>
          ))}
        </fieldset>
        <p className="muted small">Applied at once. System follows your computer's light or dark mode.</p>
      </section>

      <p className="muted small" data-testid="restart-note">
        {view.restart_required.length
          ? `Needs a server restart to take effect: ${view.restart_required.join(", ")}.`
          : "Every setting here takes effect at once: none needs a server restart."}
      </p>
      <p role="status" aria-live="polite" className={result && !result.ok ? "field-error" : "muted"} data-testid="settings-result">
        {result?.text ?? ""}
      </p>
    </div>
  );
}

function Check(props: { id: string; label: string; checked: boolean; onChange: (v: boolean) => void; hint: string }) {
  return (
    <div className="field settings-field">
      <label className="checkbox" htmlFor={props.id}>
        <input
          id={props.id}
          type="checkbox"
          checked={props.checked}
          onChange={(e) => props.onChange(e.target.checked)}
          aria-describedby={`${props.id}-hint`}
          data-testid={props.id}
        />
        {props.label}
      </label>
      <p id={`${props.id}-hint`} className="field-hint muted small">
        {props.hint}
      </p>
    </div>
  );
}
