import type { FocusEvent, KeyboardEvent } from "react";

/**
 * The keyboard rules of a disclosure (a button that opens a panel next to it): Escape closes it and gives the
 * focus back to its button (without also reaching the page's own Escape), and Tab out of it folds it away.
 * Spread the result on the element holding both the button and the panel.
 */
export function disclosureKeys(open: boolean, close: (refocus: boolean) => void) {
  return {
    onKeyDown: (e: KeyboardEvent<HTMLElement>) => {
      if (e.key === "Escape" && open) {
        e.stopPropagation();
        e.preventDefault();
        close(true);
      }
    },
    onBlur: (e: FocusEvent<HTMLElement>) => {
      const to = e.relatedTarget;
      if (open && to instanceof Node && !e.currentTarget.contains(to)) close(false);
    },
  };
}
