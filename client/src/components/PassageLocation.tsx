import type { Chunk } from "../api/types";

type Located = Pick<Chunk, "location" | "url">;

/** The passage's source web page, only if it is an http(s) address (never `javascript:` or `data:`). */
export function safeWebUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/** The source page at the passage's start, as a W3C media fragment (`#t=751`), for a timed passage with a url. */
export function mediaFragmentUrl(chunk: Located): string | null {
  const url = safeWebUrl(chunk.url);
  const start = chunk.location?.start_s;
  if (!url || start == null) return null;
  return `${url.split("#")[0]}#t=${Math.floor(start)}`;
}

/** Under this OCR confidence a passage is marked: some of its words are likely misread. */
export const OCR_LOW = 0.8;

/** "00:12:31–00:12:58", "Slide 3", "Sheet Q1, rows 2–41": a link to the moment when there is one. */
export function LocationLabel({ chunk, link = true }: { chunk: Located; link?: boolean }) {
  const label = chunk.location?.label;
  if (!label) return null;
  const href = link ? mediaFragmentUrl(chunk) : null;
  const ocr = chunk.location?.ocr_confidence;
  if (ocr != null) {
    // a scanned page or an image: its text was read by OCR, so a word may be misread (more likely when low)
    return (
      <span
        data-testid="source-location"
        className={ocr < OCR_LOW ? "ocr-confidence ocr-low" : "ocr-confidence"}
        title={`Text read by OCR from a scan or image, ${Math.round(ocr * 100)}% confidence${ocr < OCR_LOW ? ": check the page, words may be misread" : ""}`}
      >
        {label}
      </span>
    );
  }
  return href ? (
    <a href={href} target="_blank" rel="noopener noreferrer" data-testid="source-location">
      {label}
    </a>
  ) : (
    <span data-testid="source-location">{label}</span>
  );
}

/** The source web page as an outbound link (its host shown). */
export function SourceUrl({ url }: { url: string | null | undefined }) {
  const safe = safeWebUrl(url);
  if (!safe) return null;
  return (
    <a href={safe} target="_blank" rel="noopener noreferrer" className="source-url" data-testid="source-url">
      {new URL(safe).host}
    </a>
  );
}
