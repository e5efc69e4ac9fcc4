import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ExportMenu } from "./ExportMenu";

describe("Export in a menu", () => {
  it("one button; its list has the two downloads; Escape closes it and gives the focus back", () => {
    render(<ExportMenu threadId="t1" />);
    const button = screen.getByRole("button", { name: "Export" });
    expect(button).toHaveAttribute("aria-expanded", "false");
    expect(screen.queryByTestId("export-markdown")).toBeNull();
    fireEvent.click(button);
    expect(button).toHaveAttribute("aria-expanded", "true");
    const md = screen.getByTestId("export-markdown");
    expect(md).toHaveFocus();
    expect(md.getAttribute("href")).toContain("/api/threads/t1/export?format=markdown");
    expect(screen.getByTestId("export-json").getAttribute("href")).toContain("format=json");
    fireEvent.keyDown(md, { key: "Escape" });
    expect(screen.queryByTestId("export-markdown")).toBeNull();
    expect(button).toHaveFocus();
    fireEvent.click(button);
    fireEvent.pointerDown(document.body);
    expect(screen.queryByTestId("export-markdown")).toBeNull();
  });
});
