/**
 * Every file type the server takes (server/documents/parsers.py CONTENT_TYPES; tests/unit/test_client_formats.py
 * checks the two lists agree), with the type filter each belongs to. The file picker's `accept`, the upload
 * hint and the documents page's type filter are all derived from this one list.
 */
export interface Format {
  ext: string;
  /** The `type` filter of GET /api/documents it falls under. */
  family: TypeFamily;
}

export type TypeFamily =
  | "pdf"
  | "docx"
  | "text"
  | "markdown"
  | "html"
  | "csv"
  | "xlsx"
  | "pptx"
  | "epub"
  | "subtitles"
  | "jsonl"
  | "image";

export const FORMATS: Format[] = [
  { ext: ".pdf", family: "pdf" },
  { ext: ".docx", family: "docx" },
  { ext: ".md", family: "markdown" },
  { ext: ".markdown", family: "markdown" },
  { ext: ".html", family: "html" },
  { ext: ".htm", family: "html" },
  { ext: ".txt", family: "text" },
  { ext: ".vtt", family: "subtitles" },
  { ext: ".srt", family: "subtitles" },
  { ext: ".csv", family: "csv" },
  { ext: ".xlsx", family: "xlsx" },
  { ext: ".pptx", family: "pptx" },
  { ext: ".epub", family: "epub" },
  { ext: ".jsonl", family: "jsonl" },
  { ext: ".png", family: "image" },
  { ext: ".jpg", family: "image" },
  { ext: ".jpeg", family: "image" },
  { ext: ".tif", family: "image" },
  { ext: ".tiff", family: "image" },
  { ext: ".webp", family: "image" },
];

/** The type filter's choices, in the order shown, with their labels. */
export const TYPE_LABELS: Record<TypeFamily, string> = {
  pdf: "PDF",
  docx: "Word (DOCX)",
  markdown: "Markdown",
  html: "HTML",
  text: "Text",
  subtitles: "Subtitles (VTT/SRT)",
  csv: "CSV",
  xlsx: "Excel (XLSX)",
  pptx: "PowerPoint (PPTX)",
  epub: "E-book (EPUB)",
  jsonl: "JSONL corpus record",
  image: "Image (scan or photo, OCR)",
};

/** The file picker's accept list: every extension the server takes. */
export const ACCEPT = FORMATS.map((f) => f.ext).join(",");

/** "PDF, DOCX, MD, …": the extensions in words, for hints. */
export const FORMAT_NAMES = FORMATS.map((f) => f.ext.slice(1).toUpperCase()).join(", ");
