// The server's JSON payloads, as names the rest of the client uses. Every type here is an alias of the types
// generated from the server's OpenAPI document (./schema.d.ts, `npm run gen:api`): do not hand-write a server
// payload here. The few refinements below narrow what the document leaves open (an untyped object), each
// saying why; they go away when the server types those fields.
import type { components } from "./schema";

type Schemas = components["schemas"];

// ---- errors ----

/** Every non-2xx body of the /api routes: `{status_code, code, detail, extra?, request_id}`. */
export type ErrorBody = Schemas["ErrorBody"];
/** The /v1 (OpenAI-compatible) routes' error body: `{"error": {message, type, code, request_id}}`. */
export type OpenAIError = Schemas["OpenAIError"];

// ---- health and embeddings ----

export type SearchMode = Schemas["SearchResponse"]["mode"];

// `llm` and `embeddings` of GET /api/health, and GET/POST /api/admin/reembed, are plain objects in the OpenAPI
// document (`dict[str, Any]` on the server): these are the fields the server's code fills in.

/** An LLM provider's status as reported by `GET /api/health` (`llm`). */
export interface LlmStatus {
  /** "ollama" | "openai" (OpenAI-compatible server). */
  provider: string;
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

/** `GET /api/health`. */
export type Health = Omit<Schemas["Health"], "llm" | "embeddings"> & {
  llm: LlmStatus;
  /** null when the database did not answer. */
  embeddings: EmbeddingsStatus | null;
};

/** The body of `POST /api/admin/reembed`: the target model (default: EMBED_PROVIDER / EMBED_MODEL). */
export type ReembedBody = Schemas["ReembedBody"];

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

// ---- documents ----

export type DocStatus = Schemas["Document"]["status"];
/** `{id, username}`: how other users appear (owners, members, the user picker). */
export type UserRef = Schemas["Person"];
/** What the signed-in user may do with a document or collection. */
export type Access = Schemas["Document"]["access"];
export type MemberRole = Schemas["Membership"]["role"];

export type Document = Schemas["Document"];
export type DocumentList = Schemas["DocumentList"];
/** One file of an upload: queued, a duplicate, requeued (a failed one retried) or rejected (`error` says why). */
export type UploadResult = Schemas["UploadResult"];
export type UploadResults = Schemas["UploadResults"];

// ---- search ----

export type ChunkTrace = Schemas["Trace"];
/** A passage a chat search returned, as the model saw it (`tool_result` chunks). */
export type Chunk = Schemas["Passage"];
export type Timing = Schemas["Timings"];
export type Confidence = Schemas["Confidence"];
// The document's ChunkHit lists content_hash, metadata and similarity, which the server never sends
// (`exclude=True` in server/core/search.py): they are left out here.
type Unsent = "content_hash" | "metadata" | "similarity";
/** A search hit (GET /api/search). */
export type SearchChunk = Omit<Schemas["ChunkHit"], Unsent>;
export type DocumentHit = Omit<Schemas["DocumentHit"], "best_chunk"> & { best_chunk: SearchChunk };
export type SearchResponse = Omit<Schemas["SearchResponse"], "chunks" | "documents"> & {
  chunks: SearchChunk[];
  documents: DocumentHit[];
};

// ---- chat ----

export type Thread = Schemas["Thread"];
export type ThreadList = Schemas["ThreadList"];
export type ToolCall = Schemas["ToolCall"];
export type ToolResult = Schemas["ToolResult"];
/** An answer's failure: the chat `error` event, and a stored message's `error`. */
export type ChatError = Schemas["ErrorEvent"];
/** Codes of chat `error` events, e.g. llm_unreachable, llm_timeout, context_overflow, database_unavailable. */
export type ChatErrorCode = ChatError["code"];

// The document leaves Message.error untyped (server/chat/schemas.py annotates it with ErrorEvent, which is
// declared after Message): it is an ErrorEvent or null.
export type Message = Omit<Schemas["Message"], "error"> & { error?: ChatError | null };
export type ThreadDetail = Omit<Schemas["ThreadDetail"], "messages"> & { messages: Message[] };

/** The body of POST /api/chat. */
export type ChatRequest = Schemas["ChatBody"];

// ---- accounts (docs/ACCOUNTS.md) ----

export type User = Schemas["User"];
export type SessionInfo = Schemas["SessionInfo"];
export type SignedIn = Schemas["SignedIn"];
/** A user as the admin page lists them (`last_seen_at` and `documents` are set in that listing). */
export type AdminUser = User;
export type UserList = Schemas["UserList"];
export type Directory = Schemas["Directory"];
export type ApiToken = Schemas["Token"];
export type TokenList = Schemas["TokenList"];
/** `POST /api/auth/tokens`: the only time `token` is ever sent. */
export type NewApiToken = Schemas["CreatedToken"];

export type Collection = Schemas["Collection"];
export type CollectionList = Schemas["CollectionList"];
/** The owner is listed too (first, role "owner"). */
export type CollectionMember = Schemas["Member"];
export type CollectionDocument = Schemas["CollectionDocument"];
export type CollectionDetail = Schemas["CollectionDetail"];
