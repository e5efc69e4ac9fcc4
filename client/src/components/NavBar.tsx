import { useEffect, useRef, useState } from "react";
import type { Page } from "../App";
import { useAuth } from "../auth/AuthContext";
import { Link } from "../lib/router";

interface Item {
  page: Page;
  to: string;
  label: string;
  admin?: boolean;
}

const ITEMS: Item[] = [
  { page: "chat", to: "/", label: "Chat" },
  { page: "documents", to: "/documents", label: "Documents" },
  { page: "search", to: "/search", label: "Search" },
  { page: "collections", to: "/collections", label: "Collections" },
  { page: "evaluate", to: "/evaluate", label: "Evaluate" },
  { page: "admin", to: "/admin", label: "Admin", admin: true },
  { page: "settings", to: "/settings", label: "Settings" },
  { page: "account", to: "/account", label: "Account" },
];

export function NavBar({ page }: { page: Page }) {
  const { user, isAdmin, auth, logout } = useAuth();
  const [leaving, setLeaving] = useState(false);
  const items = ITEMS.filter((it) => !it.admin || isAdmin);
  const navRef = useRef<HTMLElement>(null);

  // On narrow screens the nav scrolls sideways: keep the current page's link in view.
  useEffect(() => {
    navRef.current?.querySelector('[aria-current="page"]')?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }, [page]);
  return (
    <header className="topbar">
      <Link to="/" className="brand" aria-label="ragchat home">
        <span className="brand-mark" aria-hidden="true" />
        ragchat
      </Link>
      <nav aria-label="Main" data-testid="app-nav" className="topnav" ref={navRef}>
        <ul className="nav">
          {items.map((it) => (
            <li key={it.page}>
              <Link
                to={it.to}
                className={page === it.page ? "active" : undefined}
                aria-current={page === it.page ? "page" : undefined}
                data-testid={`nav-${it.page}`}
              >
                {it.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {auth === "on" && user && (
        <div className="topbar-user">
          <span className="nav-user" title={`Signed in as ${user.username}`}>
            <span className="sr-only">Signed in as </span>
            <span data-testid="nav-user">{user.username}</span>
          </span>
          <button
            type="button"
            className="btn btn-small"
            disabled={leaving}
            onClick={() => {
              setLeaving(true);
              void logout();
            }}
            data-testid="nav-logout"
          >
            Log out
          </button>
        </div>
      )}
    </header>
  );
}
