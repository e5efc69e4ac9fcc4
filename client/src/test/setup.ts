import "@testing-library/jest-dom/vitest";
import { cleanup, configure } from "@testing-library/react";
import { afterEach } from "vitest";

afterEach(() => cleanup());

// findBy*/waitFor poll until what they wait for is there: on a busy machine (make test beside other work) a
// render can take longer than the 1 s default; a longer limit only makes a real failure slower to report.
configure({ asyncUtilTimeout: 10_000 });

// jsdom lacks these.
if (!Element.prototype.scrollIntoView) Element.prototype.scrollIntoView = function () {};
