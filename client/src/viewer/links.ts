/** The viewer's address for a document, at a cited chunk and page: `/documents/<id>?chunk=<chunk_id>&page=<n>`. */
export function viewerHref(documentId: string, chunkId?: number | null, page?: number | null): string {
  const qs = new URLSearchParams();
  if (chunkId != null) qs.set("chunk", String(chunkId));
  if (page != null) qs.set("page", String(page));
  const s = qs.toString();
  return `/documents/${encodeURIComponent(documentId)}${s ? `?${s}` : ""}`;
}
