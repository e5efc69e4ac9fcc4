import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { highlight, queryTerms } from "./highlight";

const marked = (text: string, query: string) => {
  const { container } = render(<p>{highlight(text, query)}</p>);
  return [...container.querySelectorAll("mark")].map((m) => m.textContent);
};

describe("highlight", () => {
  it("matches whole words, never a prefix inside a longer word", () => {
    expect(marked("The period per person is a perfect permit.", "per")).toEqual(["per"]);
    expect(marked("Departure and partial parts", "part")).toEqual(["parts"]);
  });

  it("matches the forms a stemmed term stands for", () => {
    expect(queryTerms("holidays")).toEqual(["holiday"]);
    expect(marked("Holiday days: holidays are booked; holidayed.", "holidays")).toEqual(["Holiday", "holidays", "holidayed"]);
    expect(marked("He was booking; it is booked; two books", "booking")).toEqual(["booking", "booked", "books"]);
  });

  it("ignores stop words and keeps the rest of the text as it was", () => {
    const { container } = render(<p>{highlight("Rules of the road", "the rules")}</p>);
    expect(container.textContent).toBe("Rules of the road");
    expect([...container.querySelectorAll("mark")].map((m) => m.textContent)).toEqual(["Rules"]);
  });

  it("treats regex characters in the query as text", () => {
    expect(marked("a+b costs (c) 5 euros", "a+b (c)")).toEqual([]);
    expect(marked("version c++ and c", "c++")).toEqual([]);
  });
});
