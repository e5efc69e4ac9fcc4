import type { Page } from "../App";
import { Link } from "../lib/router";

const ITEMS: { page: Page; to: string; label: string }[] = [
  { page: "chat", to: "/", label: "Chat" },
  { page: "documents", to: "/documents", label: "Documents" },
  { page: "search", to: "/search", label: "Search" },
];

export function NavBar({ page }: { page: Page }) {
  return (
    <header className="topbar">
      <Link to="/" className="brand" aria-label="ragchat home">
        <span className="brand-mark" aria-hidden="true" />
        ragchat
      </Link>
      <nav aria-label="Main" data-testid="app-nav">
        <ul className="nav">
          {ITEMS.map((it) => (
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
    </header>
  );
}
