import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import type { AuditEntry } from "../api/audit";
import { jsonResponse } from "../test/fixtures";
import { apiError, axeViolations, mockServer, on, session } from "../test/server";

const entry = (id: number, over: Partial<AuditEntry> = {}): AuditEntry => ({
  id,
  at: "2026-01-02T10:00:00Z",
  actor_id: "u-admin",
  actor_name: "admin",
  client: "127.0.0.1",
  action: "auth.sign_in",
  target_type: "user",
  target_id: "u-admin",
  details: { method: "password" },
  request_id: `r${id}`,
  ...over,
});
const ACTIONS = ["auth.sign_in", "chat.answer", "document.delete"];
const FIRST = [
  entry(9, {
    action: "chat.answer",
    target_type: "message",
    target_id: "m1",
    details: { status: "complete", chunks: Array.from({ length: 6 }, (_, i) => ({ chunk_id: i, document_id: "d1" })) },
  }),
  entry(8),
];
const OLDER = [entry(3, { action: "document.delete", target_type: "document", target_id: "d1", details: {} })];

beforeEach(() => window.history.replaceState(null, "", "/admin"));
afterEach(() => vi.unstubAllGlobals());

function server() {
  return mockServer(
    on("GET", "/api/auth/session", () => jsonResponse(session())),
    on("GET", "/api/admin/users", () => jsonResponse({ users: [] })),
    on("GET", "/api/admin/audit", (c) => {
      const q = new URL(c.url, "http://x").searchParams;
      if (q.get("since") === "2026-02-01") return apiError(400, "bad_request", "since: not an ISO 8601 date");
      if (q.get("cursor") === "c1") return jsonResponse({ entries: OLDER, next_cursor: null, actions: ACTIONS });
      if (q.get("action")) return jsonResponse({ entries: OLDER, next_cursor: null, actions: ACTIONS });
      return jsonResponse({ entries: FIRST, next_cursor: "c1", actions: ACTIONS });
    }),
  );
}

const open = async () => {
  render(<App />);
  fireEvent.click(await screen.findByTestId("admin-tab-audit"));
  await screen.findAllByTestId("audit-row");
};

describe("AuditLog", () => {
  it("is a tab of the admin page that lists entries newest first and pages on", async () => {
    const srv = server();
    await open();
    expect(screen.getByTestId("admin-tab-audit")).toHaveAttribute("aria-selected", "true");
    expect(screen.getAllByTestId("audit-row").map((r) => r.dataset.action)).toEqual(["chat.answer", "auth.sign_in"]);
    expect(screen.getByTestId("audit-table")).toHaveTextContent("127.0.0.1");
    expect(screen.getByTestId("audit-table")).toHaveTextContent("message m1");
    fireEvent.click(screen.getByTestId("audit-more"));
    await waitFor(() => expect(screen.getAllByTestId("audit-row")).toHaveLength(3));
    expect(srv.find("GET", "/api/admin/audit").at(-1)!.url).toContain("cursor=c1");
    expect(screen.queryByTestId("audit-more")).toBeNull();
    expect(await axeViolations()).toEqual([]);
  });

  it("filters, links the export to the same filters, and shows the server's refusal", async () => {
    const srv = server();
    await open();
    fireEvent.change(screen.getByTestId("audit-action"), { target: { value: "document.delete" } });
    fireEvent.change(screen.getByTestId("audit-actor"), { target: { value: "admin" } });
    fireEvent.click(screen.getByTestId("audit-apply"));
    await waitFor(() => expect(screen.getAllByTestId("audit-row")).toHaveLength(1));
    const url = srv.find("GET", "/api/admin/audit").at(-1)!.url;
    expect(url).toContain("action=document.delete");
    expect(url).toContain("actor=admin");
    expect(url).not.toContain("cursor");
    const href = screen.getByTestId("audit-export").getAttribute("href")!;
    expect(href).toBe("/api/admin/audit/export?actor=admin&action=document.delete");

    fireEvent.change(screen.getByTestId("audit-since"), { target: { value: "2026-02-01" } });
    fireEvent.click(screen.getByTestId("audit-apply"));
    expect(await screen.findByTestId("audit-error")).toHaveTextContent("ISO 8601");
  });

  it("moves between the tabs with the arrow keys", async () => {
    server();
    render(<App />);
    const users = await screen.findByTestId("admin-tab-users");
    fireEvent.keyDown(users, { key: "ArrowRight" });
    expect(screen.getByTestId("admin-tab-audit")).toHaveAttribute("aria-selected", "true");
    expect(screen.getByTestId("admin-tab-audit")).toHaveFocus();
    await screen.findAllByTestId("audit-row");
    fireEvent.keyDown(screen.getByTestId("admin-tab-audit"), { key: "ArrowLeft" });
    expect(screen.getByTestId("admin-tab-users")).toHaveAttribute("aria-selected", "true");
  });
});
