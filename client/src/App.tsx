import { AccountPage } from "./account/AccountPage";
import { AdminPage } from "./admin/AdminPage";
import { AuthProvider, useAuth } from "./auth/AuthContext";
import { LoginPage } from "./auth/LoginPage";
import { SetupPage } from "./auth/SetupPage";
import { ChatPage } from "./chat/ChatPage";
import { CollectionDetailPage } from "./collections/CollectionDetailPage";
import { CollectionsProvider } from "./collections/CollectionsContext";
import { CollectionsPage } from "./collections/CollectionsPage";
import { HealthBanner } from "./components/HealthBanner";
import { NavBar } from "./components/NavBar";
import { Spinner } from "./components/Spinner";
import { DocumentsPage } from "./documents/DocumentsPage";
import { EvaluatePage } from "./evaluation/EvaluatePage";
import { Link, useLocation } from "./lib/router";
import { useTitle } from "./lib/useTitle";
import { SearchPage } from "./search/SearchPage";
import { DocumentViewer } from "./viewer/DocumentViewer";
import { SettingsPage } from "./settings/SettingsPage";
import "./settings/theme";

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

export function App() {
  return (
    <AuthProvider>
      <Gate />
    </AuthProvider>
  );
}

/** Boot: read the session first, then setup, login, or the app. */
function Gate() {
  const { status, error, setupRequired, auth, user, recheck } = useAuth();
  if (status === "loading")
    return (
      <main id="main" className="auth-page">
        <Spinner label="Loading ragchat" />
      </main>
    );
  if (status === "error")
    return (
      <main id="main" className="auth-page">
        <div className="auth-card" data-testid="boot-error">
          <h1>ragchat</h1>
          <div className="error-box" role="alert">
            <div className="error-text">{error}</div>
          </div>
          <button type="button" className="btn" onClick={() => void recheck()}>
            Retry
          </button>
        </div>
      </main>
    );
  // With auth off there is nothing to set up (the server may still say no account exists).
  if (auth === "on" && setupRequired) return <SetupPage />;
  if (auth === "on" && !user) return <LoginPage />;
  // Keyed by user: another sign-in starts every page afresh.
  return <Shell key={user?.id ?? "local"} />;
}

/** Each page's tab title ("Documents — ragchat"); a page may claim a more specific one (a thread's title). */
const PAGE_TITLES: Record<Page, string> = {
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

function Shell() {
  const { pathname } = useLocation();
  const { page, threadId, collectionId, documentId } = matchRoute(pathname);
  useTitle(PAGE_TITLES[page], 0);
  return (
    <CollectionsProvider>
      <div className={`app page-${page}`}>
        <a href="#main" className="skip-link">
          Skip to content
        </a>
        <NavBar page={page} />
        <HealthBanner />
        <main id="main" className="main" tabIndex={-1}>
          {page === "chat" && <ChatPage threadId={threadId} />}
          {page === "documents" && (documentId ? <DocumentViewer key={documentId} id={documentId} /> : <DocumentsPage />)}
          {page === "search" && <SearchPage />}
          {page === "collections" &&
            (collectionId ? <CollectionDetailPage key={collectionId} id={collectionId} /> : <CollectionsPage />)}
          {page === "account" && <AccountPage />}
          {page === "admin" && <AdminPage />}
          {page === "evaluate" && <EvaluatePage />}
          {page === "settings" && <SettingsPage />}
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
    </CollectionsProvider>
  );
}
