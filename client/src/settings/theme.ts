import type { Theme } from "../api/preferences";

/** The colour theme: `system` follows the OS (prefers-color-scheme); light and dark force one (styles.css reads
 * `data-theme` on <html>). Remembered in localStorage, so a reload paints the chosen theme before any request. */

const KEY = "ragchat-theme";

export function storedTheme(): Theme {
  try {
    const value = window.localStorage.getItem(KEY);
    return value === "light" || value === "dark" ? value : "system";
  } catch {
    return "system";
  }
}

export function applyTheme(theme: Theme) {
  const root = document.documentElement;
  if (theme === "system") delete root.dataset.theme;
  else root.dataset.theme = theme;
  try {
    if (theme === "system") window.localStorage.removeItem(KEY);
    else window.localStorage.setItem(KEY, theme);
  } catch {
    /* storage disabled: the theme lasts for this page */
  }
}

if (typeof document !== "undefined") applyTheme(storedTheme());
