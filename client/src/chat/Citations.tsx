import { useId, useMemo } from "react";
import type { CitationCheck, CitationReport } from "../api/types";
import { richHandlers, useExternalLinks, type RichHandlers } from "../components/Markdown";
import { renderMarkdown } from "../lib/markdown";

/**
 * Verified citations (the `citations` SSE event, docs/SSE.md): the answer's Markdown with its doubtful
 * claims marked. A sentence whose passage does not (or only partly) support it gets a dotted underline, a
 * tooltip ("Passage 2 does not seem to support this") and a ⚠ note that screen readers get through
 * `aria-describedby`; a citation to a passage that does not exist ([7]) is struck through and flagged
 * "no passage 7" in words. Colour is never the only signal.
 */

const CITE_RE = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
const CODE_RE = /```[\s\S]*?(?:```|$)|`[^`\n]*`/g;
const SKIP = new Set(["A", "CODE", "PRE"]);

export function verdictText(c: Pick<CitationCheck, "n" | "verdict">): string {
  if (c.verdict === "no_source") return "No source: this sentence cites no passage";
  if (c.verdict === "unsupported") return `Passage ${c.n} does not seem to support this`;
  if (c.verdict === "weak") return `Passage ${c.n} only partly supports this`;
  if (c.verdict === "missing") return `No passage ${c.n}: the answer cites a source the search did not return`;
  return `Passage ${c.n} supports this`;
}

/** Each cited number in `content`, in order, with the check of the sentence it sits in (offsets are code points). */
function sourceOccurrences(content: string, report: CitationReport): { n: number; check: CitationCheck | null }[] {
  const masked = content.replace(CODE_RE, (m) => " ".repeat(m.length)); // markers in code are not rendered as such
  const cp: number[] = new Array(content.length + 1);
  let point = 0;
  for (let i = 0; i < content.length; i++) {
    cp[i] = point;
    const code = content.charCodeAt(i);
    if (code < 0xd800 || code > 0xdbff || i + 1 >= content.length) point++;
  }
  cp[content.length] = point;
  const out: { n: number; check: CitationCheck | null }[] = [];
  for (const m of masked.matchAll(CITE_RE)) {
    const at = cp[m.index ?? 0];
    for (const raw of m[1].split(",")) {
      const n = Number(raw.trim());
      const check = report.citations.find((c) => c.n === n && c.start <= at && at < c.end) ?? null;
      out.push({ n, check });
    }
  }
  return out;
}

type Occurrence = { n: number; node: Element } | { n: number; text: Text; start: number; end: number; nums: number[] };

function domOccurrences(root: Element): Occurrence[] {
  const out: Occurrence[] = [];
  const walk = (node: Node) => {
    for (const child of Array.from(node.childNodes)) {
      if (child.nodeType === Node.ELEMENT_NODE) {
        const el = child as Element;
        if (el.tagName === "BUTTON" && el.classList.contains("cite")) {
          out.push({ n: Number((el as HTMLElement).dataset.cite), node: el });
        } else if (!SKIP.has(el.tagName)) {
          walk(el);
        }
      } else if (child.nodeType === Node.TEXT_NODE) {
        const text = child as Text;
        for (const m of (text.nodeValue ?? "").matchAll(CITE_RE)) {
          const nums = m[1].split(",").map((x) => Number(x.trim()));
          for (const n of nums) out.push({ n, text, start: m.index ?? 0, end: (m.index ?? 0) + m[0].length, nums });
        }
      }
    }
  };
  walk(root);
  return out;
}

function note(doc: Document, id: string, text: string): HTMLElement {
  const flag = doc.createElement("span");
  flag.className = "claim-flag";
  flag.id = id;
  flag.title = text;
  flag.dataset.testid = "claim-flag";
  flag.setAttribute("role", "note");
  const icon = doc.createElement("span");
  icon.setAttribute("aria-hidden", "true");
  icon.textContent = "⚠";
  const words = doc.createElement("span");
  words.className = "sr-only";
  words.textContent = text;
  flag.append(icon, words);
  return flag;
}

/** Wrap the end of the sentence before `marker` (within its text node) in a `.claim` span. */
function wrapClaim(doc: Document, marker: Element, check: CitationCheck, noteId: string) {
  let prev = marker.previousSibling;
  while (prev && prev.nodeType === Node.ELEMENT_NODE && (prev as Element).matches("button.cite, .claim-flag")) {
    prev = prev.previousSibling;
  }
  const tip = verdictText(check);
  if (prev && prev.nodeType === Node.ELEMENT_NODE && (prev as Element).classList.contains("claim")) {
    const el = prev as HTMLElement; // a second doubtful citation of the same sentence
    el.setAttribute("aria-describedby", `${el.getAttribute("aria-describedby") ?? ""} ${noteId}`.trim());
    el.title = `${el.title}; ${tip}`;
    return;
  }
  if (!prev || prev.nodeType !== Node.TEXT_NODE) return;
  const text = prev as Text;
  const value = text.nodeValue ?? "";
  const boundary = lastSentenceStart(value);
  const body = value.slice(boundary).replace(/\s+$/, "");
  if (!body.trim()) return;
  const span = doc.createElement("span");
  span.className = `claim claim-${check.verdict}`;
  span.dataset.testid = `claim-${check.verdict}`;
  span.title = tip;
  span.setAttribute("aria-describedby", noteId);
  span.textContent = body;
  const after = value.slice(boundary + body.length);
  text.nodeValue = value.slice(0, boundary);
  text.after(span, ...(after ? [doc.createTextNode(after)] : []));
}

function lastSentenceStart(value: string): number {
  let start = 0;
  for (const m of value.trimEnd().matchAll(/[.!?]["')\]]*\s+/g)) start = (m.index ?? 0) + m[0].length;
  return start;
}

/** Wrap each uncited sentence that states a fact (`no_source`) where its text sits whole in one text node. */
function markUncited(box: HTMLElement, report: CitationReport, idPrefix: string) {
  const doc = box.ownerDocument;
  report.citations.forEach((check, i) => {
    if (check.verdict !== "no_source") return;
    const needle = check.sentence.trim();
    if (!needle) return;
    const walker = doc.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node as Text;
      if (text.parentElement?.closest("a, code, pre, .claim")) continue;
      const value = text.nodeValue ?? "";
      const at = value.indexOf(needle);
      if (at < 0) continue;
      const id = `${idPrefix}-u${i}`;
      const span = doc.createElement("span");
      span.className = "claim claim-no_source";
      span.dataset.testid = "claim-no_source";
      span.title = verdictText(check);
      span.setAttribute("aria-describedby", id);
      span.textContent = needle;
      const after = value.slice(at + needle.length);
      text.nodeValue = value.slice(0, at);
      text.after(span, note(doc, id, verdictText(check)), ...(after ? [doc.createTextNode(after)] : []));
      return;
    }
  });
}

/** Mark `html` (rendered from `content`) with the report's doubtful and missing citations. */
export function markCitations(html: string, content: string, report: CitationReport, idPrefix: string): string {
  const box = document.createElement("div");
  box.innerHTML = html;
  const doc = box.ownerDocument;
  markUncited(box, report, idPrefix);
  const wanted = sourceOccurrences(content, report);
  const found = domOccurrences(box);
  if (wanted.length !== found.length || wanted.some((w, i) => w.n !== found[i].n)) return box.innerHTML; // cannot align
  const missingDone = new Set<Text>();
  found.forEach((occ, i) => {
    const check = wanted[i].check;
    if (!check || check.verdict === "supported") return;
    const id = `${idPrefix}-c${i}`;
    if ("node" in occ) {
      if (check.verdict === "missing") return; // a button is only made for existing passages
      wrapClaim(doc, occ.node, check, id);
      occ.node.setAttribute("aria-describedby", id);
      occ.node.after(note(doc, id, verdictText(check)));
      return;
    }
    if (check.verdict !== "missing" || missingDone.has(occ.text)) return;
    missingDone.add(occ.text); // markers left as text: those with a number beyond the passages
    const value = occ.text.nodeValue ?? "";
    const frag = doc.createDocumentFragment();
    let last = 0;
    for (const m of value.matchAll(CITE_RE)) {
      const nums = m[1].split(",").map((x) => Number(x.trim()));
      const absent = nums.filter((n) => !report.citations.some((c) => c.n === n && c.verdict !== "missing"));
      if (absent.length === 0) continue;
      frag.append(value.slice(last, m.index));
      const wrap = doc.createElement("span");
      wrap.className = "cite-missing";
      wrap.dataset.testid = "citation-missing";
      wrap.title = absent.map((n) => verdictText({ n, verdict: "missing" })).join("; ");
      const struck = doc.createElement("s");
      struck.textContent = m[0];
      const flag = doc.createElement("span");
      flag.className = "cite-missing-flag";
      flag.textContent = `⚠ no passage ${absent.join(", ")}`;
      wrap.append(struck, flag);
      frag.append(wrap);
      last = (m.index ?? 0) + m[0].length;
    }
    frag.append(value.slice(last));
    occ.text.replaceWith(frag);
  });
  return box.innerHTML;
}

/** The answer as Markdown, with citation marks when a report exists (same clicks as `Markdown`). */
export function CitedMarkdown({
  content,
  sourceCount,
  onCite,
  onPreview,
  className,
  report,
}: {
  content: string;
  sourceCount: number;
  className: string;
  report: CitationReport;
} & RichHandlers) {
  const prefix = useId().replace(/:/g, "");
  const html = useMemo(
    () => markCitations(renderMarkdown(content, sourceCount), content, report, `cite${prefix}`),
    [content, sourceCount, report, prefix],
  );
  const [onExternal, dialog] = useExternalLinks();
  return (
    <>
      <div
        className={className}
        data-testid="message-content"
        {...richHandlers({ onCite, onPreview, onExternal })}
        dangerouslySetInnerHTML={{ __html: html }}
      />
      {dialog}
    </>
  );
}

/** One line under every checked answer: how many sentences its passages support, and what is doubtful. */
export function CitationSummary({ report }: { report: CitationReport }) {
  const weak = report.weak ?? 0;
  const noSource = report.no_source ?? 0;
  const unsearched = report.searched === false && (report.sentences ?? 0) > 0;
  const offQuestion = report.off_question === true && !report.not_covered;
  // "Not in your documents" beside a supported answer: its passages match the question poorly, so no clean ✓
  const elsewhere = report.not_covered === true && report.all_supported === true;
  const doubtful = Boolean(
    report.unsupported || report.missing || weak || noSource || unsearched || offQuestion || elsewhere,
  );
  const parts: string[] = [];
  if (report.unsupported) parts.push(`${report.unsupported} not supported by the cited passage`);
  if (weak) parts.push(`${weak} only partly supported`);
  if (report.missing) parts.push(`${report.missing} citing a passage that does not exist`);
  if (noSource) parts.push(`${noSource} stating facts with no source`);
  if (unsearched) parts.push("no search of your documents was made for this answer");
  if (offQuestion) parts.push("it may not answer what was asked");
  if (elsewhere) parts.push("but the passages match the question poorly");
  const summary = report.summary || (doubtful ? "Citation check" : "");
  if (!summary) return null;
  return (
    <p className={`note citation-summary${doubtful ? "" : " citation-summary-ok"}`} data-testid="citation-summary">
      {doubtful ? <span aria-hidden="true">⚠ </span> : <span aria-hidden="true">✓ </span>}
      {summary}
      {parts.length ? `: ${parts.join(", ")}.` : "."}
    </p>
  );
}
