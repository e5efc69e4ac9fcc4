import { describe, expect, it } from "vitest";
import { matchRuns, normalize } from "./match";

describe("matchRuns", () => {
  const page = [
    "Chapter 2",
    "The second page is about volcanoes and",
    " ",
    "the lava they pour out.",
    "Unrelated footer text here",
    "2",
  ];

  it("marks the runs of the passage, whatever the spacing and punctuation", () => {
    expect(matchRuns(page, "The second page is about volcanoes and the lava\nthey pour out")).toEqual([1, 3]);
  });

  it("marks nothing for a passage that is not on the page", () => {
    expect(matchRuns(page, "Tides follow the moon.")).toEqual([]);
    expect(matchRuns(page, "")).toEqual([]);
  });

  it("takes a short run only next to a telling one", () => {
    expect(matchRuns(["2", "other words entirely"], "see page 2 for more")).toEqual([]);
    expect(matchRuns(["volcanoes erupt", "2", "x"], "volcanoes erupt 2 times")).toEqual([0, 1]);
  });

  it("normalizes case and punctuation", () => {
    expect(normalize("  Über-Cool, (yes)!  ")).toBe("über cool yes");
  });
});
