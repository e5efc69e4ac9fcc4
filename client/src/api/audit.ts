// The audit log (admins only): GET /api/admin/audit pages, newest first, and its JSON-lines export.
import { request } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];
export type AuditEntry = Schemas["AuditEntry"];
export type AuditPage = Schemas["AuditPage"];

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

/** The query string of `filters` (and a cursor): only the fields that are set. */
export function auditQuery(filters: AuditFilters, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  const set = (key: string, value: string) => {
    if (value.trim()) q.set(key, value.trim());
  };
  set("actor", filters.actor);
  set("action", filters.action);
  set("target_type", filters.target_type);
  set("target_id", filters.target_id);
  set("since", filters.since);
  set("until", filters.before);
  for (const [k, v] of Object.entries(extra)) set(k, v);
  const text = q.toString();
  return text ? `?${text}` : "";
}

export const auditApi = {
  page: (filters: AuditFilters, cursor: string | null, limit = 50, signal?: AbortSignal) =>
    request<AuditPage>(
      `/api/admin/audit${auditQuery(filters, { limit: String(limit), ...(cursor ? { cursor } : {}) })}`,
      { signal },
    ),

  /** A link that downloads every matching row as JSON lines. */
  exportUrl: (filters: AuditFilters) => `/api/admin/audit/export${auditQuery(filters)}`,
};
