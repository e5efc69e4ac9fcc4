/** Finding a cited passage among a PDF page's text runs (pdf.js text layer items), for the viewer's highlight. */

/** Lowercase words, punctuation and spacing dropped: PDF text and chunk text differ in both. */
export const normalize = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();

/**
 * Which of `runs` (a page's text, in reading order) belong to `passage`: a run whose words all occur in the passage
 * in that order counts when it is long enough to be telling (two words or eight letters); a short one (a lone
 * word, a number) only next to one that counts. Empty when the passage is not on this page.
 */
export function matchRuns(runs: string[], passage: string): number[] {
  const text = ` ${normalize(passage)} `;
  if (text.trim().length === 0) return [];
  const norm = runs.map(normalize);
  const found = norm.map((r) => r.length > 0 && text.includes(` ${r} `));
  const strong = norm.map((r, i) => found[i] && (r.includes(" ") || r.length >= 8));
  const out: number[] = [];
  const neighbour = (i: number, step: number) => {
    for (let j = i + step; j >= 0 && j < norm.length; j += step) if (norm[j]) return strong[j];
    return false;
  };
  norm.forEach((r, i) => {
    if (!r || !found[i]) return;
    if (strong[i] || neighbour(i, -1) || neighbour(i, 1)) out.push(i);
  });
  return out;
}
