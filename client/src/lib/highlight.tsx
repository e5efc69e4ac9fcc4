import type { ReactNode } from "react";

const STOP = new Set(
  "a an and are as at be by for from has have how i in is it of on or that the this to was were what when where which who why with".split(" "),
);

/** Query → lowercase stems worth highlighting. */
export function queryTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const stems = words
    .filter((w) => w.length > 1 && !STOP.has(w))
    .map((w) => (w.length > 4 ? w.replace(/(ing|ed|es|s)$/u, "") : w));
  return [...new Set(stems)].sort((a, b) => b.length - a.length);
}

/** What `queryTerms` strips (plus a plural "s" and a silent "e"): a matched word may end in one of these. */
const SUFFIXES = "ing|ed|es|s|e|d";

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Split `text` into React nodes with matched query terms wrapped in <mark>.
 * Pure text nodes — never HTML — so passages can't inject markup.
 */
export function highlight(text: string, query: string): ReactNode[] {
  const terms = queryTerms(query);
  if (!terms.length || !text) return [text];
  // Whole words only: a term, an inflection it may have lost to stemming, then the word's end ("per" never
  // lights up inside "period"; "holiday" does in "holidays").
  const re = new RegExp(
    `(?<![\\p{L}\\p{N}])(?:${terms.map(escapeRe).join("|")})(?:${SUFFIXES})?(?![\\p{L}\\p{N}])`,
    "giu",
  );
  const out: ReactNode[] = [];
  let last = 0;
  let i = 0;
  for (const m of text.matchAll(re)) {
    const start = m.index ?? 0;
    if (start > last) out.push(text.slice(last, start));
    out.push(
      <mark key={i++} className="hl">
        {m[0]}
      </mark>,
    );
    last = start + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
