import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { jsonResponse } from "../test/fixtures";
import { apiError, axeViolations, mockServer, on, session } from "../test/server";
import type { SettingsView, UserSettings } from "../api/preferences";

const defaults: UserSettings = {
  chat_model: "llama3.2",
  search_mode: "hybrid",
  rerank: false,
  chunk_strategy: "auto",
  metadata_extraction: false,
  documents_only: false,
  theme: "system",
};

beforeEach(() => {
  window.history.replaceState(null, "", "/settings");
  window.localStorage.clear();
  delete document.documentElement.dataset.theme;
});
afterEach(() => vi.unstubAllGlobals());

function server(models: "up" | "down" = "up") {
  let values: UserSettings = { ...defaults };
  const view = (): SettingsView => ({ values, defaults, restart_required: [] });
  return mockServer(
    on("GET", "/api/auth/session", () => jsonResponse(session())),
    on("GET", "/api/preferences", () => jsonResponse(view())),
    on("PUT", "/api/preferences", (c) => {
      const patch = c.body as Partial<Record<keyof UserSettings, unknown>>;
      const next = { ...values } as Record<string, unknown>;
      for (const [k, v] of Object.entries(patch)) next[k] = v === null ? defaults[k as keyof UserSettings] : v;
      values = next as unknown as UserSettings;
      return jsonResponse(view());
    }),
    on("GET", "/api/search/rerank-cost", () =>
      jsonResponse({
        provider: "llm",
        model: "llama3.2",
        method: "json",
        candidates: 18,
        calls: 18,
        seconds: models === "up" ? 41.6 : null,
        prompt_tokens_per_s: models === "up" ? 95.2 : null,
        measured_calls: models === "up" ? 3 : 0,
      }),
    ),
    on("GET", "/api/models", () =>
      models === "up"
        ? jsonResponse({ models: [{ name: "llama3.2" }, { name: "qwen3:4b" }], default: "llama3.2", provider: "ollama" })
        : apiError(503, "service_unavailable", "Ollama is not reachable at http://127.0.0.1:11434"),
    ),
  );
}

describe("SettingsPage", () => {
  it("says what rerank adds to a chat search at the model's measured speed, or that it is not measured yet", async () => {
    server();
    const { unmount } = render(<App />);
    expect(await screen.findByText(/rerank adds about 42 s to a chat search \(18 LLM calls a chat search\)/)).toBeVisible();
    unmount();
    server("down");
    render(<App />);
    expect(await screen.findByText(/its time shows here once llama3\.2 has answered a question/)).toBeVisible();
  }, 30_000);

  it("shows values and defaults, saves only what changed, names the page", async () => {
    const srv = server();
    render(<App />);
    const model = (await screen.findByTestId("set-model")) as HTMLSelectElement;
    await waitFor(() => expect(model.tagName).toBe("SELECT"));
    await waitFor(() => expect(screen.getAllByRole("option", { name: "qwen3:4b" })).toHaveLength(1));
    expect(document.title).toBe("Settings — ragchat");
    expect(screen.getByTestId("default-chat_model")).toHaveTextContent("Default: llama3.2 (CHAT_MODEL).");
    expect(screen.getByTestId("restart-note")).toHaveTextContent("none needs a server restart");
    expect(screen.getByTestId("settings-save")).toBeDisabled();
    expect(await axeViolations()).toEqual([]);

    fireEvent.change(model, { target: { value: "qwen3:4b" } });
    fireEvent.change(screen.getByTestId("set-mode"), { target: { value: "vector" } });
    fireEvent.click(screen.getByTestId("set-rerank"));
    fireEvent.click(screen.getByTestId("settings-save"));
    await waitFor(() => expect(screen.getByTestId("settings-result")).toHaveTextContent("Saved."));
    expect(srv.find("PUT", "/api/preferences")[0].body).toEqual({ chat_model: "qwen3:4b", search_mode: "vector", rerank: true });
    expect(screen.getByTestId("settings-save")).toBeDisabled();

    fireEvent.click(screen.getByTestId("settings-reset"));
    await waitFor(() => expect(screen.getByTestId("set-mode")).toHaveValue("hybrid"));
    expect(srv.find("PUT", "/api/preferences")[1].body).toEqual({
      chat_model: null,
      search_mode: null,
      rerank: null,
      chunk_strategy: null,
      metadata_extraction: null,
      documents_only: null,
    });
  }, 30_000);

  it("applies the theme at once and remembers it", async () => {
    const srv = server();
    render(<App />);
    fireEvent.click(await screen.findByTestId("theme-dark"));
    expect(document.documentElement.dataset.theme).toBe("dark");
    await waitFor(() => expect(srv.find("PUT", "/api/preferences")).toHaveLength(1));
    expect(srv.find("PUT", "/api/preferences")[0].body).toEqual({ theme: "dark" });
    expect(window.localStorage.getItem("ragchat-theme")).toBe("dark");
    await waitFor(() => expect(screen.getByTestId("theme-dark")).toBeChecked());
    fireEvent.click(screen.getByTestId("theme-system"));
    await waitFor(() => expect(document.documentElement.dataset.theme).toBeUndefined());
  });

  it("takes a typed model name when the model server is down", async () => {
    const srv = server("down");
    render(<App />);
    await waitFor(() => expect(screen.getByTestId("default-chat_model")).toHaveTextContent("model list is unavailable"));
    const model = screen.getByTestId("set-model");
    expect(model.tagName).toBe("INPUT");
    fireEvent.change(model, { target: { value: "mistral:7b" } });
    fireEvent.click(screen.getByTestId("settings-save"));
    await waitFor(() => expect(srv.find("PUT", "/api/preferences")).toHaveLength(1));
    expect(srv.find("PUT", "/api/preferences")[0].body).toEqual({ chat_model: "mistral:7b" });
    fireEvent.change(model, { target: { value: "  " } });
    fireEvent.click(screen.getByTestId("settings-save"));
    expect(await screen.findByText("Enter a chat model name.")).toBeInTheDocument();
    expect(srv.find("PUT", "/api/preferences")).toHaveLength(1);
  });
});
