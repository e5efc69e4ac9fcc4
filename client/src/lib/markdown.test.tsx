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
    const a = box.querySelector("a")!;
    expect(a.getAttribute("href")).toBe("https://example.com");
    expect(a.getAttribute("rel")).toContain("noopener");
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
    fireEvent.click(screen.getByRole("button", { name: "Show source 2" }));
    expect(onCite).toHaveBeenCalledWith(2);
  });
});
