import { useCallback, useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from "react";

/** A tiny history-API router: nine pages and a few path parameters (lib/routes.ts) do not need a routing library. */

const listeners = new Set<() => void>();
function emit() {
  for (const l of listeners) l();
}
if (typeof window !== "undefined") window.addEventListener("popstate", emit);

function subscribe(cb: () => void) {
  listeners.add(cb);
  return () => listeners.delete(cb);
}
const getHref = () => window.location.pathname + window.location.search;

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (to === getHref()) return;
  if (opts.replace) window.history.replaceState(null, "", to);
  else window.history.pushState(null, "", to);
  emit();
}

export interface Location {
  pathname: string;
  search: URLSearchParams;
}

export function useLocation(): Location {
  const href = useSyncExternalStore(subscribe, getHref, () => "/");
  const url = new URL(href, "http://x");
  return { pathname: url.pathname, search: url.searchParams };
}

/** Query-string state: read params and replace them (keeps history clean). */
export function useSearchParams(): [URLSearchParams, (next: Record<string, string | null>) => void] {
  const { search } = useLocation();
  const update = useCallback((next: Record<string, string | null>) => {
    const params = new URLSearchParams(window.location.search);
    for (const [k, v] of Object.entries(next)) {
      if (v === null || v === "") params.delete(k);
      else params.set(k, v);
    }
    const qs = params.toString();
    navigate(window.location.pathname + (qs ? `?${qs}` : ""), { replace: true });
  }, []);
  return [search, update];
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string };

export function Link({ to, onClick, ...rest }: LinkProps) {
  const handle = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={handle} {...rest} />;
}
