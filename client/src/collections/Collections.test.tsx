import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import type { Access, Collection, CollectionDetail, Document } from "../api/types";
import { jsonResponse, makeDocument } from "../test/fixtures";
import { apiError, axeViolations, mockServer, noContent, on, session, user } from "../test/server";

const ALICE = { id: "u-alice", username: "alice" };
const BOB = { id: "u-bob", username: "bob" };
const CAROL = { id: "u-carol", username: "carol" };

const coll = (over: Partial<Collection> = {}): Collection => ({
  id: "c1",
  name: "Handbooks",
  description: "HR documents",
  owner: ALICE,
  role: "owner",
  document_count: 1,
  created_at: "2024-01-01T00:00:00Z",
  updated_at: "2024-01-01T00:00:00Z",
  ...over,
});
const doc = (id: string, title: string, over: Partial<Document> = {}): Document =>
  makeDocument({ id, filename: `${id}.md`, title, content_type: "text/markdown", byte_size: 10, chunks_total: 1, chunks_done: 1, page_count: null, owner: ALICE, ...over });

/** The documents in the fake collection (`n` more numbered ones, from carol, after alice's "Holidays"). */
const inCollection = (n = 0): Document[] => [
  doc("d1", "Holidays", { collection_ids: ["c1"] }),
  ...Array.from({ length: n }, (_, i) => doc(`n${i + 1}`, `Note ${String(i + 1).padStart(3, "0")}`, { owner: CAROL, access: "read", collection_ids: ["c1"] })),
];

/** A tiny stateful fake of the collection routes, as alice (or whoever `me` is, with `role`); GET /api/documents
 * pages the collection's documents like the server (q, limit, offset; total). */
function server(role: Access = "owner", extra = 0) {
  let inside = inCollection(extra);
  let patched: Partial<Collection> = {};
  const detail = (): CollectionDetail => ({
    ...coll({ role, owner: role === "owner" ? ALICE : CAROL, document_count: inside.length, ...patched }),
    // Like the server: the owner first (role "owner"), then the members.
    members,
  });
  let members: CollectionDetail["members"] = [
    { user: role === "owner" ? ALICE : CAROL, role: "owner" },
    { user: role === "owner" ? BOB : ALICE, role: role === "owner" ? "write" : role },
  ];
  const mine = () => [doc("d2", "Expenses"), doc("d9", "Theirs", { access: "read", owner: CAROL })];
  const srv = mockServer(
    on("GET", "/api/auth/session", () => jsonResponse(session({ user: user({ ...ALICE, is_admin: false }) }))),
    on("GET", "/api/collections", () => jsonResponse({ collections: [coll({ role, owner: detail().owner, document_count: inside.length })] })),
    on("POST", "/api/collections", (c) => {
      const b = c.body as { name: string };
      return b.name === "Handbooks"
        ? apiError(409, "conflict", "you have a collection named 'Handbooks' already")
        : jsonResponse(coll({ id: "c2", name: b.name, document_count: 0 }), 201);
    }),
    on("GET", "/api/collections/c1", () => jsonResponse(detail())),
    on("GET", "/api/users", () => jsonResponse({ users: [ALICE, BOB, CAROL] })),
    on("GET", "/api/documents", (c) => {
      const query = new URL(c.url, "http://x").searchParams;
      if (query.get("collection_id") !== "c1") return jsonResponse({ documents: [...inside.slice(0, 1), ...mine()] });
      const q = (query.get("q") ?? "").toLowerCase();
      const found = inside.filter((d) => d.title.toLowerCase().includes(q));
      const offset = Number(query.get("offset") ?? 0);
      return jsonResponse({ documents: found.slice(offset, offset + Number(query.get("limit") ?? 50)), total: found.length });
    }),
    on("PUT", /^\/api\/collections\/c1\/members\//, (c) => {
      const id = c.path.split("/").pop()!;
      const u = [ALICE, BOB, CAROL].find((x) => x.id === id)!;
      members = [...members.filter((m) => m.user.id !== id), { user: u, role: (c.body as { role: "read" }).role }];
      return noContent();
    }),
    on("DELETE", /^\/api\/collections\/c1\/members\//, (c) => {
      members = members.filter((m) => m.user.id !== c.path.split("/").pop());
      return noContent();
    }),
    on("PUT", "/api/collections/c1/documents/d2", () => {
      inside = [...inside, doc("d2", "Expenses", { collection_ids: ["c1"] })];
      return noContent();
    }),
    on("DELETE", /^\/api\/collections\/c1\/documents\//, (c) => {
      inside = inside.filter((d) => d.id !== c.path.split("/").pop());
      return noContent();
    }),
    on("PATCH", "/api/collections/c1", (c) => {
      patched = { ...patched, ...(c.body as Partial<Collection>) };
      return jsonResponse(detail());
    }),
    on("DELETE", "/api/collections/c1", () => noContent()),
  );
  return srv;
}

beforeEach(() => window.history.replaceState(null, "", "/collections"));
afterEach(() => vi.unstubAllGlobals());

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });
const select = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

describe("CollectionsPage", () => {
  it("lists collections with owner, role and count; creating one opens it", async () => {
    const srv = server();
    render(<App />);
    const row = await screen.findByTestId("collection-row");
    expect(row).toHaveTextContent("Handbooks");
    expect(row).toHaveTextContent("1 document");
    expect(within(row).getByTestId("collection-role")).toHaveTextContent("Owner");
    expect(await axeViolations()).toEqual([]);

    type("collection-name", "Handbooks");
    fireEvent.click(screen.getByTestId("collection-create"));
    expect(await screen.findByTestId("collection-error")).toHaveTextContent("named 'Handbooks' already");

    type("collection-name", "Policies");
    type("collection-description", "Company policies");
    fireEvent.click(screen.getByTestId("collection-create"));
    await waitFor(() => expect(window.location.pathname).toBe("/collections/c2"));
    expect(srv.find("POST", "/api/collections").at(-1)!.body).toEqual({ name: "Policies", description: "Company policies" });
  });

  it("shows a shared collection's owner and my role", async () => {
    server("read");
    render(<App />);
    const row = await screen.findByTestId("collection-row");
    expect(row).toHaveTextContent("Shared by carol");
    expect(row).toHaveAttribute("data-role", "read");
  });
});

describe("CollectionDetailPage", () => {
  beforeEach(() => window.history.replaceState(null, "", "/collections/c1"));

  it("the owner shares with a user, changes a role, removes a member", async () => {
    const srv = server();
    render(<App />);
    await screen.findByTestId("collection-detail");
    await waitFor(() => expect(within(screen.getByTestId("collection-member-user")).getAllByRole("option")).toHaveLength(2));
    // alice owns it and bob is a member already: only carol can be added.
    expect(within(screen.getByTestId("collection-member-user")).getByRole("option", { name: "carol" })).toBeInTheDocument();
    expect(await axeViolations()).toEqual([]);

    select("collection-member-user", CAROL.id);
    select("collection-member-role", "read");
    fireEvent.click(screen.getByTestId("collection-member-add"));
    await waitFor(() => expect(screen.getAllByTestId("collection-member-row")).toHaveLength(2));
    expect(srv.find("PUT", "/api/collections/c1/members/u-carol")[0].body).toEqual({ role: "read" });

    const bob = screen.getAllByTestId("collection-member-row").find((r) => r.dataset.userId === BOB.id)!;
    fireEvent.change(within(bob).getByTestId("collection-member-row-role"), { target: { value: "read" } });
    await waitFor(() => expect(srv.find("PUT", "/api/collections/c1/members/u-bob")).toHaveLength(1));
    fireEvent.click(within(bob).getByTestId("collection-member-remove"));
    await waitFor(() => expect(screen.getAllByTestId("collection-member-row")).toHaveLength(1));
    expect(srv.find("DELETE", "/api/collections/c1/members/u-bob")).toHaveLength(1);
  });

  it("adds one of my documents with the picker and removes one", async () => {
    const srv = server();
    render(<App />);
    await screen.findByTestId("collection-detail");
    // A searchable picker: only my documents that are not in it yet (d1 is in it, d9 is carol's).
    const search = screen.getByTestId("collection-doc-picker-search");
    fireEvent.focus(search);
    await waitFor(() => expect(screen.getAllByTestId("collection-doc-picker-option").map((o) => o.textContent)).toEqual(["Expenses · d2.md"]));
    fireEvent.change(search, { target: { value: "zzz" } });
    await screen.findByTestId("collection-doc-picker-empty");
    fireEvent.change(search, { target: { value: "exp" } });
    await waitFor(() => expect(screen.getAllByTestId("collection-doc-picker-option")).toHaveLength(1));
    fireEvent.keyDown(search, { key: "Enter" });
    await waitFor(() => expect(screen.getAllByTestId("collection-doc-row")).toHaveLength(2));
    expect(srv.find("PUT", "/api/collections/c1/documents/d2")).toHaveLength(1);

    const holidays = screen.getAllByTestId("collection-doc-row").find((r) => r.dataset.documentId === "d1")!;
    fireEvent.click(within(holidays).getByTestId("collection-doc-remove"));
    await waitFor(() => expect(screen.getAllByTestId("collection-doc-row")).toHaveLength(1));
  });

  it("pages, searches and sorts the collection's documents on the server", async () => {
    const srv = server("owner", 119);
    render(<App />);
    await waitFor(() => expect(screen.getAllByTestId("collection-doc-row")).toHaveLength(50));
    expect(screen.getByTestId("collection-doc-count")).toHaveTextContent("120 documents");
    expect(screen.getByTestId("documents-range")).toHaveTextContent("1–50 of 120 · page 1 of 3");
    expect(srv.find("GET", "/api/documents").at(-1)!.url).toContain("collection_id=c1");
    expect(await axeViolations()).toEqual([]);

    fireEvent.click(screen.getByTestId("documents-next"));
    fireEvent.click(await screen.findByTestId("documents-next"));
    await waitFor(() => expect(screen.getByTestId("documents-range")).toHaveTextContent("101–120 of 120 · page 3 of 3"));
    expect(screen.getAllByTestId("collection-doc-row")).toHaveLength(20);
    expect(srv.find("GET", "/api/documents").at(-1)!.url).toContain("offset=100");
    // Another user's document shared through the collection: its owner is shown, and the owner may remove it.
    const last = screen.getAllByTestId("collection-doc-row").at(-1)!;
    expect(last).toHaveTextContent("Note 119");
    expect(last).toHaveTextContent("from carol");
    fireEvent.click(within(last).getByTestId("collection-doc-remove"));
    await waitFor(() => expect(screen.getAllByTestId("collection-doc-row")).toHaveLength(19));
    expect(srv.find("DELETE", "/api/collections/c1/documents/n119")).toHaveLength(1);
    expect(screen.getByTestId("collection-doc-count")).toHaveTextContent("119 documents");

    select("collection-doc-sort", "title:asc");
    await waitFor(() => expect(srv.find("GET", "/api/documents").at(-1)!.url).toMatch(/sort=title&order=asc/));
    expect(srv.find("GET", "/api/documents").at(-1)!.url).not.toContain("offset=");  // back to the first page

    type("collection-doc-search", "note 11");
    await waitFor(() => expect(screen.getByTestId("collection-doc-count")).toHaveTextContent(/^9 documents of 119 match “note 11”$/)); // 110–118: 119 was removed
    expect(screen.queryByTestId("documents-pager")).toBeNull();
    type("collection-doc-search", "zzz");
    expect(await screen.findByTestId("collection-docs-empty")).toHaveTextContent("No document in this collection matches “zzz”");
  });

  it("the owner renames and deletes it", async () => {
    const srv = server();
    render(<App />);
    fireEvent.click(await screen.findByTestId("collection-rename"));
    type("collection-rename-name", "Handbooks 2024");
    fireEvent.click(screen.getByTestId("collection-rename-save"));
    expect(await screen.findByTestId("collection-title")).toHaveTextContent("Handbooks 2024");
    expect(srv.find("PATCH", "/api/collections/c1")[0].body).toEqual({ name: "Handbooks 2024", description: "HR documents" });

    fireEvent.click(screen.getByTestId("collection-delete"));
    fireEvent.click(screen.getByTestId("collection-delete-confirm"));
    await waitFor(() => expect(window.location.pathname).toBe("/collections"));
    expect(srv.find("DELETE", "/api/collections/c1")).toHaveLength(1);
  });

  it("a read-only member sees no editing controls and can leave", async () => {
    const srv = server("read");
    render(<App />);
    await screen.findByTestId("collection-detail");
    expect(screen.getByTestId("collection-my-role")).toHaveTextContent("Read only");
    for (const id of ["collection-rename", "collection-delete", "collection-member-add", "collection-doc-picker", "collection-member-remove"])
      expect(screen.queryByTestId(id)).toBeNull();
    // My own document in a collection I only read: I may still take it out.
    expect(await screen.findByTestId("collection-doc-remove")).toBeInTheDocument(); // the page of documents loads on its own
    fireEvent.click(screen.getByTestId("collection-leave"));
    await waitFor(() => expect(window.location.pathname).toBe("/collections"));
    expect(srv.find("DELETE", "/api/collections/c1/members/u-alice")).toHaveLength(1);
  });

  it("an unknown or unshared collection is a plain not-found message", async () => {
    mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session())),
      on("GET", "/api/collections/c1", () => apiError(404, "not_found", "collection not found")),
    );
    render(<App />);
    expect(await screen.findByTestId("error-box")).toHaveTextContent("doesn't exist, or it isn't shared with you");
  });
});
