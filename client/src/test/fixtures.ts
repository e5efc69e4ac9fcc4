import type { Chunk, Confidence, Document, Message, ToolResult } from "../api/types";

export function chunk(over: Partial<Chunk> = {}): Chunk {
  return {
    id: 1,
    document_id: "d1",
    filename: "guide.pdf",
    title: "User Guide",
    page: 3,
    section: null,
    chunk_index: 0,
    content: "Ollama must be running on port 11434.",
    snippet: "Ollama must be running on port 11434.",
    citation: "Based on *User Guide*, page *3*",
    score: 0.82,
    score_kind: "fused",
    trace: {
      vector_rank: 1,
      vector_score: 0.71,
      keyword_rank: 2,
      keyword_score: 3.2,
      fused_score: 0.82,
      rerank_score: null,
    },
    ...over,
  };
}

export function toolResult(over: Partial<ToolResult> = {}): ToolResult {
  return {
    id: "call_1",
    name: "search_documents",
    chunks: [chunk(), chunk({ id: 2, page: 4, content: "Second passage.", score: 0.5 })],
    search_mode: "hybrid",
    reranked: false,
    timings: { embed_ms: 2, vector_ms: 3, keyword_ms: 1, fuse_ms: 0.1, rerank_ms: 0, expand_ms: 0, total_ms: 12 },
    confidence: confidence(),
    ...over,
  };
}

/** A search's confidence, as the server reports it (`best` is the best passage's cosine similarity). */
export function confidence(label: Confidence["label"] = "high", best = 0.8): Confidence {
  const percent = Math.round(best * 100);
  const insufficient = label === "insufficient";
  return {
    label,
    percent,
    text: `${label[0].toUpperCase()}${label.slice(1)} confidence (${percent}%)`,
    insufficient,
    message: insufficient
      ? "No passage matches this question well; try other words or check that the document is uploaded."
      : null,
    best_similarity: best,
    insufficient_confidence: insufficient,
  };
}

/** A tool result as history stored before search_mode, timings etc. existed: only `id` and `chunks`. */
export const bareToolResult = (id: string, chunks: Chunk[]) => ({ id, chunks }) as unknown as ToolResult;

export function serverMessage(over: Partial<Message> = {}): Message {
  return {
    id: "m1",
    role: "assistant",
    content: "Hello",
    status: "complete",
    tool_calls: [],
    tool_results: [],
    error: null,
    created_at: "2024-01-01T00:00:00Z",
    ...over,
  };
}

/** A fetch Response whose body streams the given string pieces. */
export function streamResponse(pieces: string[], opts: { endWithError?: boolean; status?: number } = {}): Response {
  const enc = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(ctrl) {
      if (i < pieces.length) ctrl.enqueue(enc.encode(pieces[i++]));
      else if (opts.endWithError) ctrl.error(new TypeError("network error"));
      else ctrl.close();
    },
  });
  return new Response(body, {
    status: opts.status ?? 200,
    headers: { "Content-Type": "text/event-stream" },
  });
}

export const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export function jsonResponse(data: unknown, status = 200): Response {
  return new Response(status === 204 ? null : JSON.stringify(data), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

/** `GET /api/auth/session` of a server with AUTH=off (the app behaves as before accounts). */
export const SESSION_AUTH_OFF = { auth: "off", setup_required: false, user: null };

/** Answers for the routes every page of the app shell calls at boot (auth off, no collections). */
export function bootResponse(url: string): Response | null {
  if (url === "/api/auth/session") return jsonResponse(SESSION_AUTH_OFF);
  if (url === "/api/collections") return jsonResponse({ collections: [] });
  return null;
}

/** A document row as the server sends it: a ready PDF of alice's unless `over` says otherwise. */
export function makeDocument(over: Partial<Document> = {}): Document {
  return {
    id: "d1",
    filename: "guide.pdf",
    title: "Guide",
    content_type: "application/pdf",
    byte_size: 2048,
    status: "ready",
    chunks_total: 12,
    chunks_done: 12,
    page_count: 4,
    error: null,
    metadata: {},
    created_at: "2024-01-01T00:00:00Z",
    updated_at: "2024-01-01T00:00:00Z",
    owner: { id: "u1", username: "alice" },
    access: "owner",
    collection_ids: [],
    attempts: 1,
    text_search_config: "english",
    eta_s: null,
    retry_at: null,
    ...over,
    stage: over.stage ?? stageOf(over.status ?? "ready", over.chunks_total === undefined ? 12 : over.chunks_total),
  };
}

/** The stage the server would report for a status (a test that sets only `status` gets a consistent row). */
function stageOf(status: Document["status"], total: number | null): Document["stage"] {
  if (status === "processing") return total ? "embedding" : "reading";
  return status;
}
