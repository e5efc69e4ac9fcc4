import type { MouseEvent } from "react";
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
import { matchRoute, PAGE_TITLES } from "./lib/routes";
import { useTitle } from "./lib/useTitle";
import { SearchPage } from "./search/SearchPage";
import { DocumentViewer } from "./viewer/DocumentViewer";
import { SettingsPage } from "./settings/SettingsPage";
import "./settings/theme";

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

/** The skip link's target is a textarea: focus it (a fragment link alone only scrolls). */
function focusComposer(e: MouseEvent<HTMLAnchorElement>) {
  const box = document.getElementById("composer-input");
  if (!box) return;
  e.preventDefault();
  box.focus();
}

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
        {page === "chat" && (
          <a href="#composer-input" className="skip-link" onClick={focusComposer} data-testid="skip-to-composer">
            Skip to the message box
          </a>
        )}
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
