// Types mirroring the ragchat server JSON API. Keep in sync with the server.

export type SearchMode = "hybrid" | "vector" | "keyword";
export type DocStatus = "queued" | "processing" | "ready" | "failed";

export interface Health {
  status: string;
  database: string;
  embedder: string;
  ollama: {
    reachable: boolean;
    model: string;
    model_available: boolean;
    message: string | null;
  };
}

export interface Document {
  id: string;
  filename: string;
  title: string | null;
  content_type: string;
  byte_size: number;
  status: DocStatus;
  chunks_total: number | null;
  chunks_done: number;
  page_count: number | null;
  error: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface UploadResult {
  filename: string;
  status: "queued" | "duplicate" | "rejected";
  document: Document | null;
  error: string | null;
}

export interface ChunkTrace {
  vector_rank: number | null;
  vector_score: number | null;
  keyword_rank: number | null;
  keyword_score: number | null;
  fused_score: number | null;
  rerank_score: number | null;
}

export interface Chunk {
  id: string;
  document_id: string;
  filename: string;
  title: string | null;
  page: number | null;
  section: string | null;
  chunk_index: number;
  content: string;
  score: number;
  trace?: ChunkTrace | null;
}

export interface DocumentHit {
  document_id: string;
  filename: string;
  title: string | null;
  max_score: number;
  matched_chunks: number;
  best_chunk: Chunk;
}

export interface Timing {
  embed_ms?: number | null;
  vector_ms?: number | null;
  keyword_ms?: number | null;
  fuse_ms?: number | null;
  rerank_ms?: number | null;
  total_ms?: number | null;
}

export interface Confidence {
  label: "high" | "moderate" | "low";
  best_similarity: number | null;
  insufficient_confidence: boolean;
}

export interface SearchResponse {
  chunks: Chunk[];
  documents: DocumentHit[];
  query: string;
  mode: SearchMode;
  reranked: boolean;
  timing_ms: Timing;
  has_embeddings: boolean;
  confidence: Confidence;
}

export interface Thread {
  id: string;
  title: string;
  created_at: string;
  updated_at: string;
}

export interface ToolCall {
  id: string;
  name: string;
  arguments: { query?: string; document_ids?: string[] | null } & Record<string, unknown>;
}

/** A tool result. Fields other than id/chunks may be absent on old history. */
export interface ToolResult {
  id: string;
  name?: string;
  chunks: Chunk[];
  search_mode?: SearchMode | null;
  reranked?: boolean | null;
  timings?: Timing | null;
  confidence?: Confidence | null;
}

export interface ApiErrorBody {
  code: string;
  message: string;
}

export interface Message {
  id: string;
  role: "user" | "assistant";
  content: string;
  status: "complete" | "incomplete" | "error";
  tool_calls: ToolCall[];
  tool_results: ToolResult[];
  error: ApiErrorBody | null;
  created_at: string;
}

export interface ThreadDetail extends Thread {
  messages: Message[];
}

export interface ChatRequest {
  thread_id?: string;
  message: string;
  document_ids?: string[];
  search_mode?: SearchMode;
  rerank?: boolean;
}
