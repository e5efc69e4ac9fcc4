import type { SearchMode } from "../api/types";
import { Explain } from "./Explain";

const NAMES: Record<SearchMode, string> = { hybrid: "Hybrid", vector: "Vector", keyword: "Keyword" };

/** What each search did, in plain words (no "BM25" or "embedding" without saying what it means). */
const MEANINGS: Record<SearchMode, string> = {
  hybrid:
    "Hybrid search: passages were found both by meaning (similar wording counts) and by the words of your question, and the two lists were merged.",
  vector: "Meaning search: passages that say the same thing as your question were found, even in other words.",
  keyword:
    "Keyword search: passages containing the words of your question were found, rare words counting more (the BM25 ranking search engines use).",
};
const RERANKED = " Then the language model read the passages again and put the most relevant first.";

/** Badge text, or null when the mode is unknown/absent (old history). */
export function searchModeText(mode: SearchMode | null | undefined, reranked?: boolean | null): string | null {
  if (!mode || !(mode in NAMES)) return null;
  return NAMES[mode] + (reranked === true ? " + Reranked" : "");
}

/** The badge's explanation in plain words, or null for an unknown mode. */
export function searchModeMeaning(mode: SearchMode | null | undefined, reranked?: boolean | null): string | null {
  if (!mode || !(mode in MEANINGS)) return null;
  return MEANINGS[mode] + (reranked === true ? RERANKED : "");
}

export function SearchModeBadge({
  mode,
  reranked,
}: {
  mode?: SearchMode | null;
  reranked?: boolean | null;
}) {
  const text = searchModeText(mode, reranked);
  const meaning = searchModeMeaning(mode, reranked);
  if (!text || !meaning) return null;
  return (
    <Explain className={`badge badge-${mode}`} testId="search-mode-badge" explanation={meaning}>
      {text}
    </Explain>
  );
}
