import { act, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse } from "../test/fixtures";
import { HealthBanner, healthProblem } from "./HealthBanner";

const health = (reachable: boolean, model_available: boolean, message: string | null = null) => ({
  status: "ok",
  database: "ok",
  embedder: "e",
  ollama: { reachable, model: "llama3.2", model_available, message },
});

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("healthProblem", () => {
  it("is null when all is well", () => expect(healthProblem(health(true, true), false)).toBeNull());
  it("flags an unreachable Ollama, preferring the server's message", () => {
    expect(healthProblem(health(false, false), false)?.kind).toBe("ollama");
    expect(healthProblem(health(false, false, "Run ollama serve"), false)?.text).toBe("Run ollama serve");
  });
  it("flags a missing model", () => {
    expect(healthProblem(health(true, false), false)?.text).toContain("ollama pull llama3.2");
  });
  it("flags an unreachable server", () => expect(healthProblem(null, true)?.kind).toBe("server"));
});

describe("HealthBanner", () => {
  it("polls every 30 s and shows/hides the banner", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const fetchMock = vi
      .fn()
      .mockResolvedValueOnce(jsonResponse(health(true, true)))
      .mockResolvedValueOnce(jsonResponse(health(false, false, "Ollama is not reachable")));
    vi.stubGlobal("fetch", fetchMock);
    render(<HealthBanner />);
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(fetchMock).toHaveBeenCalledTimes(1);
    expect(screen.queryByTestId("health-banner")).toBeNull();
    await act(() => vi.advanceTimersByTimeAsync(29_999));
    expect(fetchMock).toHaveBeenCalledTimes(1);
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(fetchMock).toHaveBeenCalledTimes(2);
    expect(screen.getByTestId("health-banner")).toHaveTextContent("Ollama is not reachable");
  });
});
