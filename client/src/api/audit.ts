// The audit log (admins only): GET /api/admin/audit pages, newest first, and its JSON-lines export.
import { get, getUrl, type Query } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];
export type AuditEntry = Schemas["AuditEntry"];
export type AuditPage = Schemas["AuditPage"];
type AuditQuery = Query<"/api/admin/audit", "get">;

/** The page's filters as typed (empty: not filtered). `since`/`before` are dates (UTC days). */
export type AuditFilters = {
  actor: string;
  action: string;
  target_type: string;
  target_id: string;
  since: string;
  before: string;
};

export const NO_FILTERS: AuditFilters = {
  actor: "",
  action: "",
  target_type: "",
  target_id: "",
  since: "",
  before: "",
};

/** The query of `filters`: only the fields that are set (trimmed). */
export function auditQuery(filters: AuditFilters): AuditQuery {
  const set = (value: string) => value.trim() || undefined;
  const action = set(filters.action);
  return {
    actor: set(filters.actor),
    // one action, as typed: the server answers 400 for one it does not know
    action: action === undefined ? undefined : [action as Schemas["AuditAction"]],
    target_type: set(filters.target_type),
    target_id: set(filters.target_id),
    since: set(filters.since),
    until: set(filters.before),
  };
}

export const auditApi = {
  page: (filters: AuditFilters, cursor: string | null, limit = 50, signal?: AbortSignal) =>
    get("/api/admin/audit", { params: { query: { ...auditQuery(filters), limit, cursor: cursor || undefined } }, signal }),

  /** A link that downloads every matching row as JSON lines. */
  exportUrl: (filters: AuditFilters) => getUrl("/api/admin/audit/export", { params: { query: auditQuery(filters) } }),
};
