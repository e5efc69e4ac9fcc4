import DOMPurify from "dompurify";
import { Marked } from "marked";

/**
 * Markdown → safe HTML.
 *
 * Two layers: (1) raw HTML in the Markdown source is escaped, so a `<script>`
 * or `<img onerror=…>` written by the model shows up as literal text;
 * (2) the rendered HTML is passed through DOMPurify (drops scripts, event
 * handlers, `javascript:` URLs, images, forms, inline styles).
 * Citation markers like `[2]` then become buttons — created by us, after
 * sanitizing — when `sourceCount` says source 2 exists.
 */

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

const marked = new Marked({ gfm: true, breaks: true, async: false });
marked.use({
  renderer: {
    html({ text }) {
      return escapeHtml(text);
    },
  },
});

let hooked = false;
function purifier() {
  if (!hooked) {
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
    hooked = true;
  }
  return DOMPurify;
}

const PURIFY_CONFIG = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["img", "style", "form", "input", "button", "textarea", "select", "iframe", "svg", "math", "video", "audio", "source", "picture"],
  FORBID_ATTR: ["style", "class", "id", "srcset"],
  ALLOW_DATA_ATTR: false,
};

const CITE_RE = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
const SKIP = new Set(["A", "CODE", "PRE"]);

function linkCitations(root: Node, sourceCount: number) {
  if (sourceCount <= 0) return;
  const doc = root.ownerDocument ?? document;
  const walker = doc.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    let p = n.parentNode;
    let skip = false;
    while (p && p !== root) {
      if (SKIP.has((p as Element).tagName)) skip = true;
      p = p.parentNode;
    }
    if (!skip && CITE_RE.test(n.nodeValue ?? "")) texts.push(n as Text);
    CITE_RE.lastIndex = 0;
  }
  for (const t of texts) {
    const value = t.nodeValue ?? "";
    const frag = doc.createDocumentFragment();
    let last = 0;
    for (const m of value.matchAll(CITE_RE)) {
      const nums = m[1].split(",").map((x) => Number(x.trim()));
      if (!nums.every((n) => n >= 1 && n <= sourceCount)) continue;
      frag.append(value.slice(last, m.index));
      for (const n of nums) {
        const b = doc.createElement("button");
        b.type = "button";
        b.className = "cite";
        b.dataset.cite = String(n);
        b.dataset.testid = "citation";
        b.setAttribute("aria-label", `Show source ${n}`);
        b.textContent = `[${n}]`;
        frag.append(b);
      }
      last = (m.index ?? 0) + m[0].length;
    }
    if (last === 0) continue;
    frag.append(value.slice(last));
    t.replaceWith(frag);
  }
}

/** Render untrusted Markdown to sanitized HTML, with `[n]` citations as buttons. */
export function renderMarkdown(source: string, sourceCount = 0): string {
  const raw = marked.parse(source ?? "") as string;
  const frag = purifier().sanitize(raw, { ...PURIFY_CONFIG, RETURN_DOM_FRAGMENT: true });
  linkCitations(frag, sourceCount);
  const box = document.createElement("div");
  box.append(frag);
  return box.innerHTML;
}
