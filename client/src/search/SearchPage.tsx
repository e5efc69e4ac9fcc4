import { ConfidenceChip } from "../components/ConfidenceChip";
import { useEffect, useState } from "react";
import { searchApi } from "../api/search";
import type { MetadataFilters, SearchMode, SearchResponse } from "../api/types";
import { SearchModeBadge } from "../components/SearchModeBadge";
import { Spinner } from "../components/Spinner";
import { formatMs } from "../lib/format";
import { CollectionFilter } from "../components/CollectionFilter";
import { Link, useSearchParams } from "../lib/router";
import { useDebounced } from "../lib/useDebounced";
import { rerankUnavailable, useHealth } from "../lib/health";
import { FacetChips } from "./FacetChips";
import { SearchControls } from "./SearchControls";
import { ResultsByChunk, ResultsByDocument } from "./SearchResults";

export const SEARCH_DEBOUNCE_MS = 250;
const MODES: SearchMode[] = ["hybrid", "vector", "keyword"];

/** URL → search settings. A missing/invalid mode or rerank is null: the server's default applies. */
export function parseSearchParams(p: URLSearchParams): { q: string; mode: SearchMode | null; rerank: boolean | null } {
  const m = p.get("mode");
  const r = p.get("rerank");
  return {
    q: p.get("q") ?? "",
    mode: (MODES as string[]).includes(m ?? "") ? (m as SearchMode) : null,
    rerank: r === "true" || r === "1" ? true : r === "false" || r === "0" ? false : null,
  };
}

type Result = { key: string; data?: SearchResponse; error?: string };

export function SearchPage() {
  const [params, setParams] = useSearchParams();
  const { q, mode, rerank } = parseSearchParams(params);
  const collection = params.get("collection") ?? "";
  const [text, setText] = useState(q);
  const [tab, setTab] = useState<"documents" | "chunks">("documents");
  const [result, setResult] = useState<Result | null>(null);
  const [filters, setFilters] = useState<MetadataFilters>({});
  const debounced = useDebounced(text, SEARCH_DEBOUNCE_MS);
  // The LLM is unreachable: no rerank (the switch is disabled and says why), rather than a failed one.
  const noRerank = rerankUnavailable(useHealth());
  const wantRerank = noRerank ? false : rerank;

  // Typed text → URL (debounced).
  useEffect(() => {
    if (debounced.trim() !== q) setParams({ q: debounced.trim() || null });
  }, [debounced]);

  // URL changed elsewhere (back/forward) → input.
  useEffect(() => {
    setText((t) => (t.trim() === q ? t : q));
  }, [q]);

  const filterKey = JSON.stringify(filters);
  const key = `${q}\u0000${mode}\u0000${wantRerank}\u0000${collection}\u0000${filterKey}`;
  useEffect(() => {
    if (!q) {
      setResult(null);
      return;
    }
    const ctrl = new AbortController();
    searchApi
      .search({ q, mode, rerank: wantRerank, collectionIds: collection ? [collection] : undefined, filters }, ctrl.signal)
      .then((data) => setResult({ key, data }))
      .catch((e: unknown) => {
        if (!ctrl.signal.aborted) setResult({ key, error: e instanceof Error ? e.message : String(e) });
      });
    return () => ctrl.abort();
  }, [key, q, mode, wantRerank, collection, filterKey]);

  const loading = !!q && result?.key !== key;
  const data = result?.data;

  return (
    <div className="page">
      <header className="page-header">
        <h1>Search</h1>
        <p className="muted">Query your documents directly — see what the assistant would retrieve, and why.</p>
      </header>
      <SearchControls
        text={text}
        onText={setText}
        mode={mode ?? data?.mode ?? "hybrid"}
        onMode={(m) => setParams({ mode: m })}
        rerank={rerank ?? data?.reranked ?? false}
        onRerank={(r) => setParams({ rerank: r ? "true" : "false" })}
        rerankUnavailable={noRerank}
        filter={
          <CollectionFilter
            id="search-collection"
            value={collection}
            onChange={(c) => setParams({ collection: c || null })}
            testId="search-collection"
          />
        }
      />
      {q && <FacetChips facets={data?.facets} filters={filters} onChange={setFilters} />}

      <div className="search-body" aria-live="polite" aria-busy={loading}>
        {!q ? (
          <p className="muted empty-hint">Type a question or keywords to search across all your documents.</p>
        ) : result?.error ? (
          <div className="error-box" role="alert" data-testid="search-error">
            <div className="error-text">{result.error}</div>
          </div>
        ) : !data ? (
          <div className="center-state">
            <Spinner label="Searching" />
          </div>
        ) : !data.has_embeddings ? (
          <div className="empty" data-testid="search-empty" data-reason="no-documents">
            <h2>No documents yet</h2>
            <p className="muted">
              There is nothing to search. <Link to="/documents">Upload some documents</Link> and try again once they
              are ready.
            </p>
          </div>
        ) : data.chunks.length === 0 ? (
          <div className="empty" data-testid="search-empty" data-reason="no-results">
            <h2>No results for ‘{data.query || q}’</h2>
            <p className="muted">Try other words, or switch the search mode.</p>
          </div>
        ) : (
          <div className={loading ? "stale" : undefined}>
            <div className="results-bar">
              <div className="tabs" role="tablist" aria-label="Group results">
                <button
                  type="button"
                  role="tab"
                  aria-selected={tab === "documents"}
                  onClick={() => setTab("documents")}
                  data-testid="search-tab-documents"
                >
                  By document
                </button>
                <button
                  type="button"
                  role="tab"
                  aria-selected={tab === "chunks"}
                  onClick={() => setTab("chunks")}
                  data-testid="search-tab-chunks"
                >
                  By chunk
                </button>
              </div>
              <div className="results-info">
                <SearchModeBadge mode={data.mode} reranked={data.reranked} />
                <ConfidenceChip confidence={data.confidence} />
                <span className="muted small" data-testid="search-timing" title={timingTitle(data)}>
                  {data.chunks.length} {data.chunks.length === 1 ? "result" : "results"} in{" "}
                  {Math.round(data.timing_ms?.total_ms ?? 0)} ms
                </span>
              </div>
            </div>
            {data.rerank?.warning && (
              <p
                className="banner"
                style={{ margin: "8px 0", borderRadius: 6 }}
                role="status"
                data-testid="rerank-warning"
                data-status={data.rerank.status}
              >
                {data.rerank.warning}
              </p>
            )}
            {data.confidence?.insufficient && data.confidence.message && (
              <p className="muted small" data-testid="confidence-message">
                {data.confidence.message}
              </p>
            )}
            <div role="tabpanel">
              {tab === "documents" ? <ResultsByDocument data={data} /> : <ResultsByChunk data={data} />}
            </div>
          </div>
        )}
      </div>
    </div>
  );
}

function timingTitle(d: SearchResponse): string {
  const t = d.timing_ms ?? {};
  return [
    ["embed", t.embed_ms],
    ["vector", t.vector_ms],
    ["keyword", t.keyword_ms],
    ["fuse", t.fuse_ms],
    ["rerank", t.rerank_ms],
  ]
    .filter(([, v]) => v != null)
    .map(([k, v]) => `${k} ${formatMs(v as number)} ms`)
    .join(" · ");
}

