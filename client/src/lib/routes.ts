/** The app's pages and how a path maps to one (the shell renders it, the nav marks it). */

export type Page = "chat" | "documents" | "search" | "collections" | "account" | "admin" | "evaluate" | "settings" | "notfound";

export interface Route {
  page: Page;
  threadId: string | null;
  /** Only on `/collections/:id`. */
  collectionId?: string;
  /** Only on `/documents/:id` (the viewer). */
  documentId?: string;
}

export function matchRoute(pathname: string): Route {
  const path = pathname.replace(/\/+$/, "") || "/";
  if (path === "/") return { page: "chat", threadId: null };
  const m = /^\/chat\/([^/]+)$/.exec(path);
  if (m) return { page: "chat", threadId: decodeURIComponent(m[1]) };
  if (path === "/chat") return { page: "chat", threadId: null };
  if (path === "/documents") return { page: "documents", threadId: null };
  const d = /^\/documents\/([^/]+)$/.exec(path);
  if (d) return { page: "documents", threadId: null, documentId: decodeURIComponent(d[1]) };
  if (path === "/search") return { page: "search", threadId: null };
  if (path === "/collections") return { page: "collections", threadId: null };
  const c = /^\/collections\/([^/]+)$/.exec(path);
  if (c) return { page: "collections", threadId: null, collectionId: decodeURIComponent(c[1]) };
  if (path === "/account") return { page: "account", threadId: null };
  if (path === "/admin") return { page: "admin", threadId: null };
  if (path === "/evaluate") return { page: "evaluate", threadId: null };
  if (path === "/settings") return { page: "settings", threadId: null };
  return { page: "notfound", threadId: null };
}

/** Each page's tab title ("Documents — ragchat"); a page may claim a more specific one (a thread's title). */
export const PAGE_TITLES: Record<Page, string> = {
  chat: "Chat",
  documents: "Documents",
  search: "Search",
  collections: "Collections",
  account: "Account",
  admin: "Admin",
  evaluate: "Evaluate",
  settings: "Settings",
  notfound: "Page not found",
};

/** Where a passage opens in the document viewer (`/documents/:id?chunk=&page=`). */
export function viewerUrl(chunk: { document_id: string; id: number | string; page?: number | null }): string {
  const qs = new URLSearchParams({ chunk: String(chunk.id) });
  if (chunk.page != null) qs.set("page", String(chunk.page));
  return `/documents/${encodeURIComponent(chunk.document_id)}?${qs.toString()}`;
}
