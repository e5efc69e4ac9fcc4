import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked } from "marked";

/**
 * Markdown → safe HTML.
 *
 * Two layers: (1) raw HTML in the Markdown source is escaped, so a `<script>`
 * or `<img onerror=…>` written by the model shows up as literal text;
 * (2) the rendered HTML is passed through DOMPurify (drops scripts, event
 * handlers, `javascript:` URLs, images, forms, inline styles).
 * Citation markers like `[2]` then become buttons — created by us, after
 * sanitizing — when `sourceCount` says source 2 exists. Links (inline, reference
 * or autolinks) to ragchat's own origin stay links; a link to any other host
 * becomes a button showing its text with the full URL written beside it, and it
 * opens only after a confirmation that shows the URL again (`ExternalLinkDialog`):
 * an answer cannot make the browser send anything out without a click on a
 * visible URL (a planted document can ask the model to put retrieved text into
 * a link's query string). Other schemes (mailto:, tel:, …) become plain text. Code blocks are
 * highlighted (highlight.js core with a few languages; it escapes the code
 * itself) and get a Copy button, also after sanitizing.
 */

for (const [name, lang] of Object.entries({ bash, css, javascript, json, python, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, lang);
}
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
hljs.registerAliases(["js", "jsx"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });

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
const SKIP = new Set(["A", "CODE", "PRE", "BUTTON"]);

/** The origin links may point to without a confirmation: the page's own. */
const ownOrigin = () => window.location.origin;

/** Links to other origins → a button + the visible URL; other schemes → text; own-origin links stay. */
function guardLinks(root: DocumentFragment) {
  const doc = root.ownerDocument ?? document;
  root.querySelectorAll("a").forEach((a) => {
    const text = a.textContent ?? "";
    const href = a.getAttribute("href");
    let url: URL | null = null;
    try {
      url = href ? new URL(href, window.location.href) : null;
    } catch {
      url = null;
    }
    if (url && (url.protocol === "http:" || url.protocol === "https:") && url.origin === ownOrigin()) return;
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
      // nothing to open: the text, and the target written out when there was one
      a.replaceWith(doc.createTextNode(href && text !== href ? `${text} (${href})` : text));
      return;
    }
    const box = doc.createElement("span");
    box.className = "ext-link";
    box.dataset.testid = "external-link";
    const button = doc.createElement("button");
    button.type = "button";
    button.className = "ext-link-text";
    button.dataset.extLink = url.href;
    button.title = url.href;
    button.setAttribute("aria-label", `${text} (external link to ${url.host}, asks before opening)`);
    button.textContent = text || url.href;
    box.append(button);
    if (text.trim() !== url.href && text.trim() !== href) {
      const shown = doc.createElement("span");
      shown.className = "ext-url";
      shown.dataset.testid = "external-url";
      shown.textContent = ` (${url.href})`;
      box.append(shown);
    }
    a.replaceWith(box);
  });
}

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

/** The language named after a fence's backticks (```python), when highlight.js knows it. */
function fenceLanguage(token: { lang?: string }): string | null {
  const lang = (token.lang ?? "").trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  return lang && hljs.getLanguage(lang) ? lang : null;
}

/** Highlight each `pre > code` (in order: `langs` are the fences' languages) and give it a Copy button. */
function decorateCode(root: DocumentFragment, langs: (string | null)[]) {
  const doc = root.ownerDocument ?? document;
  root.querySelectorAll("pre > code").forEach((code, i) => {
    const pre = code.parentElement as HTMLElement;
    const lang = langs[i] ?? null;
    const text = code.textContent ?? "";
    if (lang) {
      code.innerHTML = hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
      code.className = `hljs language-${lang}`;
    }
    const box = doc.createElement("div");
    box.className = "code-block";
    const copy = doc.createElement("button");
    copy.type = "button";
    copy.className = "code-copy";
    copy.dataset.copyCode = "";
    copy.dataset.testid = "code-copy";
    copy.textContent = "Copy";
    copy.setAttribute("aria-label", lang ? `Copy ${lang} code` : "Copy code");
    pre.replaceWith(box);
    box.append(copy, pre);
  });
}

/** Render untrusted Markdown to sanitized HTML, with `[n]` citations as buttons. */
export function renderMarkdown(source: string, sourceCount = 0): string {
  const langs: (string | null)[] = [];
  const raw = marked.parse(source ?? "", {
    walkTokens: (t) => {
      if (t.type === "code") langs.push(fenceLanguage(t as { lang?: string }));
    },
  }) as string;
  const frag = purifier().sanitize(raw, { ...PURIFY_CONFIG, RETURN_DOM_FRAGMENT: true });
  guardLinks(frag);
  decorateCode(frag, langs);
  linkCitations(frag, sourceCount);
  const box = document.createElement("div");
  box.append(frag);
  return box.innerHTML;
}
