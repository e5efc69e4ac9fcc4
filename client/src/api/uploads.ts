// Uploads (POST /api/documents, multipart): one request per file, a few at a time, each file's results.
import { ApiError, isRecord, request, type JsonResponse } from "./client";
import type { UploadResult } from "./types";

/** POST /api/documents's answer; its body is a form (FormData), which `request` sends as it is. */
type Uploaded = JsonResponse<"/api/documents", "post">;

/** Uploads in flight at once: each file is its own request (a request's body is limited to MAX_UPLOAD_MB). */
export const UPLOAD_CONCURRENCY = 2;

/** Statuses about the file itself: that file is rejected, the others still go. */
const FILE_REFUSALS = new Set([400, 413, 415]);

/** The per-file results of a refused upload (`extra.results` of its 400/413/415). */
function refusedResults(e: ApiError): UploadResult[] | null {
  const results = isRecord(e.extra) ? e.extra.results : null;
  return Array.isArray(results) && results.length ? (results as UploadResult[]) : null;
}

const rejected = (filename: string, error: string): UploadResult => ({
  filename,
  status: "rejected",
  document: null,
  error,
});

/** Upload one file; a refusal of the file (or a failure of its request) is its `rejected` result. */
async function uploadOne(
  file: File,
  collectionId: string | null,
  fields?: Record<string, string>,
): Promise<UploadResult[]> {
  const form = new FormData();
  form.append("files", file, file.name);
  if (collectionId) form.append("collection_id", collectionId);
  for (const [name, value] of Object.entries(fields ?? {})) form.append(name, value);
  try {
    return (await request<Uploaded>("/api/documents", { method: "POST", body: form })).results;
  } catch (e) {
    if (e instanceof ApiError) {
      // 401 (signed out), 403 and 404 (the collection) would fail every file the same way: stop the batch.
      if (e.status === 401 || e.status === 403 || e.status === 404) throw e;
      return (FILE_REFUSALS.has(e.status) && refusedResults(e)) || [rejected(file.name, e.message)];
    }
    // A network failure (the server may also drop a connection whose body is over its limit).
    return [rejected(file.name, "the upload did not reach the server")];
  }
}

/**
 * Upload `files`, one request per file (at most UPLOAD_CONCURRENCY at a time), so a batch may exceed the
 * server's per-request limit. Resolves with every file's results, in the order of `files`; `onFile` hears
 * each file's as it arrives. Rejects (after the requests under way) only when the session is lost or the
 * collection may not be written to (401/403/404), which no file of the batch would get past.
 */
export async function uploadFiles(
  files: File[],
  collectionId?: string | null,
  onFile?: (results: UploadResult[], index: number) => void,
  fields?: Record<string, string>,
): Promise<UploadResult[]> {
  const out: UploadResult[][] = files.map(() => []);
  const failures: unknown[] = [];
  let next = 0;
  const worker = async () => {
    while (!failures.length && next < files.length) {
      const i = next++;
      try {
        out[i] = await uploadOne(files[i], collectionId ?? null, fields);
        onFile?.(out[i], i);
      } catch (error) {
        failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(UPLOAD_CONCURRENCY, files.length) }, worker));
  if (failures.length) throw failures[0];
  return out.flat();
}

