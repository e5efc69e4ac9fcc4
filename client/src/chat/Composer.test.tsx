import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { Composer } from "./Composer";

describe("Composer", () => {
  it("Enter sends, Shift+Enter inserts a newline", async () => {
    const onSend = vi.fn();
    render(<Composer sending={false} onSend={onSend} onStop={() => {}} />);
    const box = screen.getByTestId("composer-input");
    await userEvent.type(box, "line one{Shift>}{Enter}{/Shift}line two");
    expect(box).toHaveValue("line one\nline two");
    expect(onSend).not.toHaveBeenCalled();
    await userEvent.type(box, "{Enter}");
    expect(onSend).toHaveBeenCalledWith("line one\nline two");
    expect(box).toHaveValue("");
  });

  it("does not send blank messages", async () => {
    const onSend = vi.fn();
    render(<Composer sending={false} onSend={onSend} onStop={() => {}} />);
    await userEvent.type(screen.getByTestId("composer-input"), "   {Enter}");
    expect(onSend).not.toHaveBeenCalled();
    expect(screen.getByTestId("send-button")).toBeDisabled();
  });

  it("stays enabled while an answer streams (the next draft) and offers Stop", async () => {
    const onStop = vi.fn();
    const onSend = vi.fn(() => Promise.resolve(true));
    render(<Composer sending onSend={onSend} onStop={onStop} />);
    const box = screen.getByTestId("composer-input");
    expect(box).toBeEnabled();
    await userEvent.type(box, "next question");
    expect(screen.getByTestId("send-button")).toBeEnabled();
    fireEvent.click(screen.getByTestId("stop-button"));
    expect(onStop).toHaveBeenCalled();
  });

  it("a refused question comes back into the box (never lost)", async () => {
    const onSend = vi.fn(() => Promise.resolve(false));
    render(<Composer sending onSend={onSend} onStop={() => {}} notice="An answer is being generated" />);
    const box = screen.getByTestId("composer-input");
    await userEvent.type(box, "keep me{Enter}");
    expect(onSend).toHaveBeenCalledWith("keep me");
    await waitFor(() => expect(box).toHaveValue("keep me"));
    expect(screen.getByTestId("composer-notice")).toHaveTextContent("An answer is being generated");
  });

  it("counts characters near the limit and disables Send over it", () => {
    const onSend = vi.fn();
    render(<Composer sending={false} onSend={onSend} onStop={() => {}} maxChars={100} />);
    const box = screen.getByTestId("composer-input");
    fireEvent.change(box, { target: { value: "x".repeat(50) } });
    expect(screen.queryByTestId("char-count")).toBeNull();
    fireEvent.change(box, { target: { value: "x".repeat(85) } });
    expect(screen.getByTestId("char-count")).toHaveTextContent("85 / 100 characters");
    expect(box).toHaveAttribute("aria-describedby", "composer-count");
    fireEvent.change(box, { target: { value: "x".repeat(104) } });
    expect(screen.getByTestId("char-count")).toHaveTextContent("104 / 100 — 4 too many");
    expect(screen.getByTestId("send-button")).toBeDisabled();
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).not.toHaveBeenCalled();
    expect(box).toHaveValue("x".repeat(104));
  });

  it("has no Stop button when idle", () => {
    render(<Composer sending={false} onSend={() => {}} onStop={() => {}} />);
    expect(screen.queryByTestId("stop-button")).toBeNull();
  });
});
