import { fireEvent, render, screen } from "@testing-library/react";
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

  it("is disabled while sending and offers Stop", () => {
    const onStop = vi.fn();
    render(<Composer sending onSend={() => {}} onStop={onStop} />);
    expect(screen.getByTestId("composer-input")).toBeDisabled();
    expect(screen.getByTestId("send-button")).toBeDisabled();
    fireEvent.click(screen.getByTestId("stop-button"));
    expect(onStop).toHaveBeenCalled();
  });

  it("has no Stop button when idle", () => {
    render(<Composer sending={false} onSend={() => {}} onStop={() => {}} />);
    expect(screen.queryByTestId("stop-button")).toBeNull();
  });
});
