import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse } from "../test/fixtures";
import { apiError, mockServer, on } from "../test/server";
import { Suggestions } from "./Suggestions";

afterEach(() => vi.unstubAllGlobals());

const questions = [
  { text: "What does Employee Handbook say about Paid holidays?", document_id: "d1", document_title: "Employee Handbook" },
  { text: "What are the key points of volcano?", document_id: "d2", document_title: "volcano" },
];

describe("Suggestions", () => {
  it("lists the server's questions; a click hands the question over", async () => {
    const srv = mockServer(on("GET", "/api/suggestions", () => jsonResponse({ questions })));
    const pick = vi.fn();
    render(<Suggestions onPick={pick} limit={3} />);
    const buttons = await screen.findAllByTestId("suggestion");
    expect(buttons.map((b) => b.textContent)).toEqual(questions.map((q) => q.text));
    expect(buttons[0]).toHaveAttribute("title", "From Employee Handbook");
    expect(srv.find("GET", "/api/suggestions")[0].url).toBe("/api/suggestions?limit=3");
    fireEvent.click(buttons[1]);
    expect(pick).toHaveBeenCalledWith("What are the key points of volcano?");
  });

  it("shows nothing for an empty library or a failed request", async () => {
    const srv = mockServer(on("GET", "/api/suggestions", () => jsonResponse({ questions: [] })));
    const { container, unmount } = render(<Suggestions onPick={() => {}} />);
    await waitFor(() => expect(srv.find("GET", "/api/suggestions")).toHaveLength(1));
    expect(container).toBeEmptyDOMElement();
    unmount();
    vi.unstubAllGlobals();
    const failing = mockServer(on("GET", "/api/suggestions", () => apiError(500, "internal_error", "boom")));
    const second = render(<Suggestions onPick={() => {}} />);
    await waitFor(() => expect(failing.find("GET", "/api/suggestions")).toHaveLength(1));
    expect(second.container).toBeEmptyDOMElement();
  });
});
