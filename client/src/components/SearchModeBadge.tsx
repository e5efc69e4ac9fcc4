import type { SearchMode } from "../api/types";

const NAMES: Record<SearchMode, string> = { hybrid: "Hybrid", vector: "Vector", keyword: "Keyword" };

/** Badge text, or null when the mode is unknown/absent (old history). */
export function searchModeText(mode: SearchMode | null | undefined, reranked?: boolean | null): string | null {
  if (!mode || !(mode in NAMES)) return null;
  return NAMES[mode] + (reranked === true ? " + Reranked" : "");
}

export function SearchModeBadge({
  mode,
  reranked,
}: {
  mode?: SearchMode | null;
  reranked?: boolean | null;
}) {
  const text = searchModeText(mode, reranked);
  if (!text) return null;
  return (
    <span className={`badge badge-${mode}`} data-testid="search-mode-badge" title={`Search mode: ${text}`}>
      {text}
    </span>
  );
}
