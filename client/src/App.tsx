import { ChatPage } from "./chat/ChatPage";
import { HealthBanner } from "./components/HealthBanner";
import { NavBar } from "./components/NavBar";
import { DocumentsPage } from "./documents/DocumentsPage";
import { Link, useLocation } from "./lib/router";
import { SearchPage } from "./search/SearchPage";

export type Page = "chat" | "documents" | "search" | "notfound";

export function matchRoute(pathname: string): { page: Page; threadId: string | null } {
  const path = pathname.replace(/\/+$/, "") || "/";
  if (path === "/") return { page: "chat", threadId: null };
  const m = /^\/chat\/([^/]+)$/.exec(path);
  if (m) return { page: "chat", threadId: decodeURIComponent(m[1]) };
  if (path === "/chat") return { page: "chat", threadId: null };
  if (path === "/documents") return { page: "documents", threadId: null };
  if (path === "/search") return { page: "search", threadId: null };
  return { page: "notfound", threadId: null };
}

export function App() {
  const { pathname } = useLocation();
  const { page, threadId } = matchRoute(pathname);
  return (
    <div className={`app page-${page}`}>
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <NavBar page={page} />
      <HealthBanner />
      <main id="main" className="main" tabIndex={-1}>
        {page === "chat" && <ChatPage threadId={threadId} />}
        {page === "documents" && <DocumentsPage />}
        {page === "search" && <SearchPage />}
        {page === "notfound" && (
          <div className="page center-state" data-testid="not-found">
            <h1>Page not found</h1>
            <Link to="/" className="btn">
              Go to chat
            </Link>
          </div>
        )}
      </main>
    </div>
  );
}
