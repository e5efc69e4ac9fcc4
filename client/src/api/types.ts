// Types mirroring the ragchat server JSON API. Keep in sync with the server.

export type SearchMode = "hybrid" | "vector" | "keyword";
export type DocStatus = "queued" | "processing" | "ready" | "failed";

/** An LLM provider's status as reported by `GET /api/health` (`llm`). */
export interface LlmStatus {
  /** "ollama" | "openai" (OpenAI-compatible server); absent on an old server's `ollama` block. */
  provider?: string;
  reachable: boolean;
  model: string;
  model_available: boolean;
  message: string | null;
  context_length?: number | null;
}

export interface EmbeddingModelRef {
  provider: string;
  model: string;
}

export interface EmbeddingSpace extends EmbeddingModelRef {
  dim: number;
}

/** Stored vectors vs the configured embedding model. */
export interface EmbeddingsStatus {
  configured: EmbeddingModelRef;
  stored: EmbeddingSpace | null;
  building: EmbeddingSpace | null;
  status: "ok" | "mismatch" | "reembedding";
  message: string | null;
}

export interface Health {
  status: "ok" | "degraded" | (string & {});
  database: string;
  embedder: string;
  /** null when the database did not answer; absent on an old server. */
  embeddings?: EmbeddingsStatus | null;
  llm?: LlmStatus;
  /** Old servers only (before `llm`). */
  ollama?: LlmStatus;
}

/** `GET`/`POST /api/admin/reembed`: progress of a switch of embedding model. */
export interface ReembedProgress {
  state: "idle" | "building";
  /** Label of the model being built, e.g. "nomic-embed-text (ollama, 768 dims)". */
  target: string | null;
  done: number;
  total: number;
  percent: number;
  /** Only on GET. */
  embeddings?: EmbeddingsStatus | null;
}

/** Codes of chat `error` events (the server may add more). */
export type ChatErrorCode =
  | "llm_unreachable"
  | "llm_timeout"
  | "llm_bad_response"
  | "llm_error"
  | "llm_auth"
  | "llm_rate_limited"
  | "context_overflow"
  | "embeddings_unavailable"
  | "model_not_found"
  | "database_unavailable"
  | (string & {});

/** `{id, username}`: how other users appear (owners, members, the user picker). */
export interface UserRef {
  id: string;
  username: string;
}

/** What the signed-in user may do with a document or collection. */
export type Access = "owner" | "write" | "read";
export type MemberRole = "read" | "write";

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
  owner: UserRef;
  /** "owner": mine; "write"/"read": shared with me through a collection. */
  access: Access;
  collection_ids: string[];
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
  code: ChatErrorCode;
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
  collection_ids?: string[];
  search_mode?: SearchMode;
  rerank?: boolean;
}

// ---- accounts (docs/ACCOUNTS.md) ----

export interface User {
  id: string;
  username: string;
  is_admin: boolean;
  disabled: boolean;
  created_at: string;
}

/** `GET /api/auth/session` */
export interface SessionInfo {
  auth: "on" | "off";
  /** True while no account exists: the page offers "create the admin account". */
  setup_required: boolean;
  user: User | null;
}

/** A user as the admin page lists them. */
export interface AdminUser extends User {
  last_seen_at: string | null;
  documents: number;
}

export interface ApiToken {
  id: string;
  name: string;
  /** The first characters of the token, e.g. "rc_a1b2c3". */
  prefix: string;
  created_at: string;
  last_used_at: string | null;
}

/** `POST /api/auth/tokens`: the only time `token` is ever sent. */
export interface NewApiToken extends ApiToken {
  token: string;
}

export interface Collection {
  id: string;
  name: string;
  description: string | null;
  owner: UserRef;
  /** My role in it. */
  role: Access;
  document_count: number;
  created_at: string;
}

export interface CollectionMember {
  user: UserRef;
  /** The owner is listed too (first, role "owner"). */
  role: Access;
}

export interface CollectionDocument {
  id: string;
  filename: string;
  title: string | null;
  owner: UserRef;
}

export interface CollectionDetail extends Collection {
  members: CollectionMember[];
  documents: CollectionDocument[];
}
