import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { makeDocument } from "../test/fixtures";
import { DocumentRow } from "./DocumentRow";

describe("a document's keyword-search language", () => {
  it("is shown when it is not English", () => {
    render(<ul><DocumentRow doc={makeDocument({ text_search_config: "german", language: "de" })} onDelete={async () => {}} /></ul>);
    expect(screen.getByTestId("document-language")).toHaveTextContent("german");
  });

  it("is not shown for English documents", () => {
    render(<ul><DocumentRow doc={makeDocument()} onDelete={async () => {}} /></ul>);
    expect(screen.queryByTestId("document-language")).toBeNull();
  });
});
