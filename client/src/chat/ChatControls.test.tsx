import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ThreadSettings } from "../api/threads";
import { jsonResponse } from "../test/fixtures";
import { ChatControls, optionsSummary } from "./ChatControls";

const PREFS = {
  values: { chat_model: "qwen2.5", search_mode: "keyword", rerank: true, documents_only: true, chunk_strategy: "auto", metadata_extraction: false, theme: "system" },
  defaults: {},
  restart_required: [],
};

function mockFetch() {
  const fetchMock = vi.fn(async (url: string) => {
    if (url.startsWith("/api/preferences")) return jsonResponse(PREFS);
    if (url.startsWith("/api/models")) return jsonResponse({ default: "llama3.2", models: [{ name: "llama3.2" }, { name: "qwen2.5" }] });
    if (url.startsWith("/api/collections")) return jsonResponse({ collections: [] });
    throw new Error(`unmocked ${url}`);
  });
  vi.stubGlobal("fetch", fetchMock);
  return fetchMock;
}

afterEach(() => vi.unstubAllGlobals());

function Harness({ initial = {}, onChange = vi.fn() }: { initial?: ThreadSettings; onChange?: (s: ThreadSettings) => void }) {
  return (
    <form>
      <ChatControls settings={initial} onChange={onChange} />
      <textarea aria-label="Message" />
    </form>
  );
}

describe("the Options popover by the message box", () => {
  it("is one collapsed button; opens with the focus inside; Escape closes it and gives the focus back", async () => {
    mockFetch();
    render(<Harness />);
    const button = screen.getByRole("button", { name: /Options/ });
    expect(button).toHaveAttribute("aria-expanded", "false");
    expect(button).toHaveAttribute("aria-haspopup", "dialog");
    expect(screen.queryByTestId("chat-controls")).toBeNull();
    expect(screen.queryByTestId("options-summary")).toBeNull(); // all defaults: no chip
    fireEvent.click(button);
    const panel = screen.getByRole("dialog", { name: "Search options for this chat" });
    expect(button).toHaveAttribute("aria-expanded", "true");
    expect(button.getAttribute("aria-controls")).toBe(panel.id);
    expect(panel.contains(document.activeElement)).toBe(true);
    fireEvent.keyDown(document.activeElement!, { key: "Escape" });
    expect(screen.queryByTestId("chat-controls")).toBeNull();
    expect(button).toHaveFocus();
  });

  it("says what Default means from the user's Settings, in plain words", async () => {
    mockFetch();
    render(<Harness />);
    fireEvent.click(screen.getByTestId("options-button"));
    await waitFor(() => expect(screen.getByTestId("chat-mode")).toHaveTextContent("Default: Words (keyword)"));
    expect(screen.getByTestId("chat-model")).toHaveTextContent("Default (qwen2.5)");
    expect(screen.getByTestId("chat-documents-only")).toHaveTextContent("Default: say so");
    expect(screen.getByTestId("chat-rerank")).toBeChecked(); // the user's default is on
    expect(screen.getByTestId("chat-mode")).toHaveAccessibleDescription(/Meaning finds passages that say the same in other words/);
    expect(screen.getByRole("link", { name: "Settings" })).toHaveAttribute("href", "/settings");
  });

  it("a change that equals the default goes back to Default; another one is saved", async () => {
    mockFetch();
    const onChange = vi.fn();
    render(<Harness onChange={onChange} initial={{ rerank: false }} />);
    fireEvent.click(screen.getByTestId("options-button"));
    await waitFor(() => expect(screen.getByTestId("chat-mode")).toHaveTextContent("Default: Words"));
    fireEvent.click(screen.getByTestId("chat-rerank")); // on = the user's default
    expect(onChange).toHaveBeenLastCalledWith({ rerank: null });
    fireEvent.change(screen.getByTestId("chat-mode"), { target: { value: "vector" } });
    expect(onChange).toHaveBeenLastCalledWith({ rerank: false, search_mode: "vector" });
  });

  it("shows what differs from the defaults as a short chip that opens the options", () => {
    mockFetch();
    render(<Harness initial={{ document_ids: ["a", "b"], search_mode: "keyword", rerank: true, model: "qwen3" }} />);
    const chip = screen.getByTestId("options-summary");
    expect(chip).toHaveTextContent("2 documents · Keyword · Reranked · qwen3");
    expect(chip).toHaveAccessibleName(/Options changed for this chat: 2 documents/);
    fireEvent.click(chip);
    expect(screen.getByTestId("chat-controls")).toBeInTheDocument();
  });

  it("folds away when the focus leaves it", () => {
    mockFetch();
    render(<Harness />);
    fireEvent.click(screen.getByTestId("options-button"));
    const inside = document.activeElement!;
    fireEvent.blur(inside, { relatedTarget: screen.getByRole("textbox", { name: "Message" }) });
    expect(screen.queryByTestId("chat-controls")).toBeNull();
  });

  it("summaries in words", () => {
    expect(optionsSummary({})).toBe("");
    expect(optionsSummary({ collection_ids: ["c"], documents_only: false, rerank: false })).toBe(
      "1 collection · No rerank · May answer beyond documents",
    );
  });
});
