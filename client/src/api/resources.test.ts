// What each resource module sends: method, URL (path, encoding, query order) and JSON body, call by call. The
// routes are the server's (docs/API.md); a change here is a change of what the client asks the server.
import { afterEach, describe, expect, it, vi } from "vitest";
import { auditApi, NO_FILTERS } from "./audit";
import { authApi } from "./auth";
import { collectionsApi } from "./collections";
import { documentsApi } from "./documents";
import { evaluationApi } from "./evaluation";
import { feedbackApi } from "./feedback";
import { modelsApi } from "./models";
import { preferencesApi } from "./preferences";
import { reembedApi } from "./reembed";
import { searchApi } from "./search";
import { suggestionsApi } from "./suggestions";
import { threadsApi } from "./threads";
import { tokensApi } from "./tokens";
import { adminApi, directoryApi } from "./users";

afterEach(() => vi.unstubAllGlobals());

interface Sent {
  method: string;
  url: string;
  body?: unknown;
}

/** Run `call` against a fetch that answers `answer`; what it sent. */
async function sent(call: () => Promise<unknown>, answer: unknown = {}): Promise<Sent> {
  const seen: Sent[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit = {}) => {
      const body = typeof init.body === "string" ? (JSON.parse(init.body) as unknown) : undefined;
      seen.push({ method: init.method ?? "GET", url, ...(body === undefined ? {} : { body }) });
      return new Response(JSON.stringify(answer), { status: 200, headers: { "Content-Type": "application/json" } });
    }),
  );
  await call();
  expect(seen).toHaveLength(1);
  return seen[0];
}

const id = "a/b c"; // an id that must be encoded
const enc = "a%2Fb%20c";

describe("resource modules send", () => {
  it("documents", async () => {
    expect(await sent(() => documentsApi.get(id))).toEqual({ method: "GET", url: `/api/documents/${enc}` });
    expect(await sent(() => documentsApi.remove(id))).toEqual({ method: "DELETE", url: `/api/documents/${enc}` });
    expect(await sent(() => documentsApi.rename(id, "T"))).toEqual({
      method: "PATCH",
      url: `/api/documents/${enc}`,
      body: { title: "T" },
    });
    expect(await sent(() => documentsApi.updateMetadata(id, { year: "2024", old: null }))).toEqual({
      method: "PATCH",
      url: `/api/documents/${enc}`,
      body: { metadata: { year: "2024", old: null } },
    });
    expect(await sent(() => documentsApi.extractMetadata(id))).toEqual({
      method: "POST",
      url: `/api/documents/${enc}/extract-metadata`,
    });
    expect(await sent(() => documentsApi.retry(id))).toEqual({ method: "POST", url: `/api/documents/${enc}/retry` });
    expect(await sent(() => documentsApi.cancel(id))).toEqual({ method: "POST", url: `/api/documents/${enc}/cancel` });
    expect(await sent(() => documentsApi.rechunk(id, "line", null))).toEqual({
      method: "POST",
      url: `/api/documents/${enc}/rechunk`,
      body: { strategy: "line", chunk_tokens: null },
    });
    expect(await sent(() => documentsApi.bulk("retry", ["d1", "d2"]), { results: [] })).toEqual({
      method: "POST",
      url: "/api/documents/bulk",
      body: { action: "retry", ids: ["d1", "d2"] },
    });
    const filter = { q: "tax", status: "" as const, collection_id: "c9" }; // "" is not sent
    expect(await sent(() => documentsApi.bulk("remove_from_collection", { filter }, "c9"), { results: [] })).toEqual({
      method: "POST",
      url: "/api/documents/bulk",
      body: { action: "remove_from_collection", filter: { q: "tax", collection_id: "c9" }, collection_id: "c9" },
    });
    expect(await sent(() => documentsApi.chunks(id, { chunkId: 7, limit: 40 }))).toEqual({
      method: "GET",
      url: `/api/documents/${enc}/chunks?limit=40&chunk_id=7`,
    });
    expect(await sent(() => documentsApi.ingestUrl("https://x.org/a?b=1", null), { results: [] })).toEqual({
      method: "POST",
      url: "/api/documents/url",
      body: { url: "https://x.org/a?b=1", collection_id: null },
    });
    expect(await sent(() => documentsApi.find(" tax ", {}), { documents: [] })).toEqual({
      method: "GET",
      url: "/api/documents?limit=20&sort=title&order=asc&q=tax",
    });
    expect(await sent(() => documentsApi.find("", { limit: 30, owner: "me" }), { documents: [] })).toEqual({
      method: "GET",
      url: "/api/documents?limit=30&sort=title&order=asc&owner=me",
    });
    expect(documentsApi.fileUrl(id)).toBe(`/api/documents/${enc}/file`);
  });

  it("documents.find filters by title or file name, at most `limit`", async () => {
    const doc = (n: number, title: string | null, filename: string) => ({ id: `d${n}`, title, filename });
    const answer = { documents: [doc(1, "Tax 2024", "a.pdf"), doc(2, null, "taxes.md"), doc(3, "Recipes", "r.md")] };
    let found: { id: string }[] = [];
    await sent(async () => {
      found = await documentsApi.find("TAX", { limit: 1 });
    }, answer);
    expect(found.map((d) => d.id)).toEqual(["d1"]);
    await sent(async () => {
      found = await documentsApi.find("tax");
    }, answer);
    expect(found.map((d) => d.id)).toEqual(["d1", "d2"]);
  });

  it("collections", async () => {
    expect(await sent(() => collectionsApi.list(), { collections: [] })).toEqual({ method: "GET", url: "/api/collections" });
    expect(await sent(() => collectionsApi.create("Taxes"))).toEqual({
      method: "POST",
      url: "/api/collections",
      body: { name: "Taxes" },
    });
    expect(await sent(() => collectionsApi.create("Taxes", "2024"))).toMatchObject({ body: { name: "Taxes", description: "2024" } });
    expect(await sent(() => collectionsApi.get(id))).toEqual({ method: "GET", url: `/api/collections/${enc}` });
    expect(await sent(() => collectionsApi.update(id, { name: "N" }))).toEqual({
      method: "PATCH",
      url: `/api/collections/${enc}`,
      body: { name: "N" },
    });
    expect(await sent(() => collectionsApi.remove(id))).toEqual({ method: "DELETE", url: `/api/collections/${enc}` });
    expect(await sent(() => collectionsApi.setMember(id, "u 1", "write"))).toEqual({
      method: "PUT",
      url: `/api/collections/${enc}/members/u%201`,
      body: { role: "write" },
    });
    expect(await sent(() => collectionsApi.removeMember(id, "u1"))).toEqual({
      method: "DELETE",
      url: `/api/collections/${enc}/members/u1`,
    });
    expect(await sent(() => collectionsApi.addDocument(id, "d1"))).toEqual({
      method: "PUT",
      url: `/api/collections/${enc}/documents/d1`,
    });
    expect(await sent(() => collectionsApi.removeDocument(id, "d1"))).toEqual({
      method: "DELETE",
      url: `/api/collections/${enc}/documents/d1`,
    });
  });

  it("threads, feedback, models, suggestions", async () => {
    expect(await sent(() => threadsApi.list(), { threads: [] })).toEqual({ method: "GET", url: "/api/threads" });
    expect(await sent(() => threadsApi.get(id))).toEqual({ method: "GET", url: `/api/threads/${enc}` });
    expect(await sent(() => threadsApi.rename(id, "T"))).toEqual({ method: "PATCH", url: `/api/threads/${enc}`, body: { title: "T" } });
    expect(await sent(() => threadsApi.saveSettings(id, { model: "m", documents_only: true }))).toEqual({
      method: "PATCH",
      url: `/api/threads/${enc}`,
      body: { settings: { model: "m", documents_only: true } },
    });
    expect(await sent(() => threadsApi.remove(id))).toEqual({ method: "DELETE", url: `/api/threads/${enc}` });
    expect(await sent(() => threadsApi.stop(id))).toEqual({ method: "POST", url: `/api/threads/${enc}/stop` });
    expect(await sent(() => threadsApi.branch(id, "m1"))).toEqual({
      method: "POST",
      url: `/api/threads/${enc}/branch`,
      body: { message_id: "m1" },
    });
    expect(threadsApi.exportUrl(id, "markdown")).toBe(`/api/threads/${enc}/export?format=markdown`);
    expect(await sent(() => feedbackApi.put("m 1", "up", null))).toEqual({
      method: "PUT",
      url: "/api/messages/m%201/feedback",
      body: { rating: "up", note: null },
    });
    expect(await sent(() => modelsApi.list())).toEqual({ method: "GET", url: "/api/models" });
    expect(await sent(() => suggestionsApi.list(4), { questions: [] })).toEqual({ method: "GET", url: "/api/suggestions?limit=4" });
  });

  it("search", async () => {
    expect(await sent(() => searchApi.search({ q: "tax" }))).toEqual({ method: "GET", url: "/api/search?q=tax" });
    const all = await sent(() =>
      searchApi.search({
        q: "tax & fees",
        mode: "hybrid",
        rerank: false,
        limit: 10,
        documentIds: ["d1"],
        collectionIds: ["c1", "c2"],
        filters: { year: ["2023", "2024"], type: ["pdf"] },
      }),
    );
    expect(all.url).toBe(
      "/api/search?q=tax+%26+fees&mode=hybrid&rerank=false&limit=10&document_ids=d1&collection_ids=c1&collection_ids=c2" +
        "&filter=year%3D2023&filter=year%3D2024&filter=type%3Dpdf",
    );
    // null and 0 are the server's defaults: left out
    expect((await sent(() => searchApi.search({ q: "x", mode: null, rerank: null, limit: 0 }))).url).toBe("/api/search?q=x");
  });

  it("auth, tokens, users", async () => {
    expect(await sent(() => authApi.session())).toEqual({ method: "GET", url: "/api/auth/session" });
    expect(await sent(() => authApi.ssoConfig())).toEqual({ method: "GET", url: "/api/auth/oidc/config" });
    expect(await sent(() => authApi.login("bob", "pw"), { user: {} })).toEqual({
      method: "POST",
      url: "/api/auth/login",
      body: { username: "bob", password: "pw" },
    });
    expect(await sent(() => authApi.setup("bob", "pw"), { user: {} })).toMatchObject({ method: "POST", url: "/api/auth/setup" });
    expect(await sent(() => authApi.logout())).toEqual({ method: "POST", url: "/api/auth/logout" });
    expect(await sent(() => authApi.logoutAll())).toEqual({ method: "POST", url: "/api/auth/logout-all?revoke_tokens=true" });
    expect((await sent(() => authApi.logoutAll(false))).url).toBe("/api/auth/logout-all?revoke_tokens=false");
    expect(await sent(() => authApi.changePassword("a", "b"))).toEqual({
      method: "POST",
      url: "/api/auth/password",
      body: { current_password: "a", new_password: "b" },
    });
    expect(await sent(() => tokensApi.list(), { tokens: [] })).toEqual({ method: "GET", url: "/api/auth/tokens" });
    expect(await sent(() => tokensApi.create("ci"))).toEqual({
      method: "POST",
      url: "/api/auth/tokens",
      body: { name: "ci", expires_in_days: null },
    });
    expect(await sent(() => tokensApi.revoke(id))).toEqual({ method: "DELETE", url: `/api/auth/tokens/${enc}` });
    expect(await sent(() => directoryApi.list(), { users: [] })).toEqual({ method: "GET", url: "/api/users" });
    expect(await sent(() => adminApi.listUsers(), { users: [] })).toEqual({ method: "GET", url: "/api/admin/users" });
    expect(await sent(() => adminApi.createUser({ username: "ann", password: "pw" }))).toEqual({
      method: "POST",
      url: "/api/admin/users",
      body: { username: "ann", password: "pw" },
    });
    expect(await sent(() => adminApi.updateUser(id, { disabled: true }))).toEqual({
      method: "PATCH",
      url: `/api/admin/users/${enc}`,
      body: { disabled: true },
    });
    expect(await sent(() => adminApi.resetPassword(id, "pw"))).toEqual({
      method: "POST",
      url: `/api/admin/users/${enc}/password`,
      body: { password: "pw" },
    });
    expect(await sent(() => adminApi.deleteUser(id))).toEqual({ method: "DELETE", url: `/api/admin/users/${enc}` });
  });

  it("preferences, evaluation, re-embedding, audit", async () => {
    expect(await sent(() => preferencesApi.get())).toEqual({ method: "GET", url: "/api/preferences" });
    expect(await sent(() => preferencesApi.put({ theme: "dark", chat_model: null }))).toEqual({
      method: "PUT",
      url: "/api/preferences",
      body: { theme: "dark", chat_model: null },
    });
    expect(await sent(() => evaluationApi.start({ n: 5 }))).toEqual({ method: "POST", url: "/api/eval/runs", body: { n: 5 } });
    expect(await sent(() => evaluationApi.list(), { runs: [] })).toEqual({ method: "GET", url: "/api/eval/runs" });
    expect(await sent(() => evaluationApi.get(12))).toEqual({ method: "GET", url: "/api/eval/runs/12" });
    expect(await sent(() => reembedApi.progress())).toEqual({ method: "GET", url: "/api/admin/reembed" });
    expect(await sent(() => reembedApi.start())).toEqual({ method: "POST", url: "/api/admin/reembed", body: {} });

    const filters = { ...NO_FILTERS, actor: " bob ", action: "login", since: "2024-01-01", before: "2024-02-01" };
    expect(await sent(() => auditApi.page(filters, "cur 1", 20))).toEqual({
      method: "GET",
      url: "/api/admin/audit?actor=bob&action=login&since=2024-01-01&until=2024-02-01&limit=20&cursor=cur+1",
    });
    expect((await sent(() => auditApi.page(NO_FILTERS, null))).url).toBe("/api/admin/audit?limit=50");
    expect(auditApi.exportUrl(filters)).toBe("/api/admin/audit/export?actor=bob&action=login&since=2024-01-01&until=2024-02-01");
    expect(auditApi.exportUrl(NO_FILTERS)).toBe("/api/admin/audit/export");
  });
});
