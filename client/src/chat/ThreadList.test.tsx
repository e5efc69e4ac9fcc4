import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ThreadList } from "./ThreadList";

const thread = (id: string, title: string) => ({ id, title, created_at: "", updated_at: "" });
const noop = async () => {};

describe("thread search", () => {
  it("narrows the list by title, and says when nothing matches", () => {
    const threads = [thread("a", "Holiday allowance"), thread("b", "Remote work"), thread("c", "")];
    render(<ThreadList threads={threads} activeId={null} error={null} onNew={() => {}} onSelect={() => {}} onRename={noop} onDelete={noop} />);
    expect(screen.getAllByTestId("thread-item")).toHaveLength(3);
    fireEvent.change(screen.getByTestId("thread-search"), { target: { value: "  REMOTE " } });
    expect(screen.getAllByTestId("thread-item")).toHaveLength(1);
    expect(screen.getByTestId("thread-list")).toHaveTextContent("Remote work");
    fireEvent.change(screen.getByTestId("thread-search"), { target: { value: "untitled" } });
    expect(screen.getAllByTestId("thread-item")).toHaveLength(1);
    fireEvent.change(screen.getByTestId("thread-search"), { target: { value: "<img src=x onerror=alert(1)>" } });
    expect(screen.queryByTestId("thread-item")).toBeNull();
    expect(screen.getByTestId("threads-none")).toHaveTextContent("No conversation titled like “<img src=x onerror=alert(1)>”.");
  });
});
