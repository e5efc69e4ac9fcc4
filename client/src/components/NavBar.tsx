import { useEffect, useRef, useState } from "react";
import type { Page } from "../lib/routes";
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
  // On narrow screens (styles.css, max-width 760px) the links fold into a menu behind one button.
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [page]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      e.preventDefault(); // the chat page's Escape (stop the answer) is not this one
      setOpen(false);
    };
    const onClick = (e: MouseEvent) => {
      if (!navRef.current?.parentElement?.contains(e.target as Node)) setOpen(false);
    };
    window.addEventListener("keydown", onKey);
    window.addEventListener("click", onClick);
    return () => {
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("click", onClick);
    };
  }, [open]);
  const current = items.find((it) => it.page === page)?.label ?? "Menu";
  return (
    <header className={`topbar${open ? " nav-open" : ""}`}>
      <Link to="/" className="brand" aria-label="ragchat home">
        <span className="brand-mark" aria-hidden="true" />
        ragchat
      </Link>
      <button
        type="button"
        className="btn btn-small nav-toggle"
        aria-expanded={open}
        aria-controls="main-nav"
        onClick={() => setOpen((o) => !o)}
        data-testid="nav-toggle"
      >
        <span aria-hidden="true">☰</span> {current}
        <span className="sr-only"> — menu</span>
      </button>
      <nav aria-label="Main" data-testid="app-nav" className="topnav" ref={navRef} id="main-nav">
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
