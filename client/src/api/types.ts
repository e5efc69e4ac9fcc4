// The server's JSON payloads, as names the rest of the client uses. Every type here is an alias of the types
// generated from the server's OpenAPI document (./schema.d.ts, `npm run gen:api`): do not hand-write a server
// payload here.
import type { components } from "./schema";

type Schemas = components["schemas"];

// ---- errors ----

/** Every non-2xx body of the /api routes: `{status_code, code, detail, extra?, request_id}`. */
export type ErrorBody = Schemas["ErrorBody"];
/** The /v1 (OpenAI-compatible) routes' error body: `{"error": {message, type, code, request_id}}`. */
export type OpenAIError = Schemas["OpenAIError"];

// ---- health and embeddings ----

export type SearchMode = Schemas["SearchResponse"]["mode"];

/** An LLM provider's status as reported by `GET /api/health` (`llm`). */
export type LlmStatus = Schemas["LlmStatus"];
export type EmbeddingModelRef = Schemas["ModelRef"];
export type EmbeddingSpace = Schemas["SpaceRef"];
/** Stored vectors vs the configured embedding model. */
export type EmbeddingsStatus = Schemas["EmbeddingsStatus"];
/** `GET /api/health` (503 with the same body when the database does not answer). */
export type Health = Schemas["Health"];
/** The body of `POST /api/admin/reembed`: the target model (default: EMBED_PROVIDER / EMBED_MODEL). */
export type ReembedBody = Schemas["ReembedBody"];
/** `POST /api/admin/reembed`: progress of a switch of embedding model (GET adds the embeddings' status). */
export type ReembedProgress = Schemas["ReembedProgress"];
/** `GET /api/admin/reembed`: the progress and the embeddings' status. */
export type ReembedStatus = Schemas["ReembedStatus"];

// ---- documents ----

export type DocStatus = Schemas["Document"]["status"];
/** `{id, username}`: how other users appear (owners, members, the user picker). */
export type UserRef = Schemas["Person"];
/** What the signed-in user may do with a document or collection. */
export type Access = Schemas["Document"]["access"];
export type MemberRole = Schemas["Membership"]["role"];

export type Document = Schemas["Document"];
export type DocumentList = Schemas["DocumentList"];
/** GET /api/documents/{id}/chunks: a document's chunks in order (the viewer). */
export type DocumentChunk = Schemas["DocumentChunk"];
export type ChunkList = Schemas["ChunkList"];
/** POST /api/documents/bulk: one result per id (`error`: not found, forbidden, conflict). */
export type BulkResult = Schemas["BulkResult"];
/** POST /api/documents/bulk's answer: the results (by filter: only the failures), how many matched and worked. */
export type BulkResults = Schemas["BulkResults"];
/** One file of an upload: queued, a duplicate, requeued (a failed one retried) or rejected (`error` says why). */
export type UploadResult = Schemas["UploadResult"];
export type UploadResults = Schemas["UploadResults"];

// ---- search ----

export type ChunkTrace = Schemas["Trace"];
/** A passage a chat search returned, as the model saw it (`tool_result` chunks). */
export type Chunk = Schemas["Passage"];
export type Timing = Schemas["Timings"];
export type Confidence = Schemas["Confidence"];
/** A search hit (GET /api/search). */
export type SearchChunk = Schemas["Passage"];
export type DocumentHit = Schemas["DocumentHit"];
export type SearchResponse = Schemas["SearchResponse"];
/** A metadata value's document count among the readable documents in a search's scope. */
export type FacetValue = Schemas["FacetValue"];
/** Metadata key → its most frequent values (GET /api/search `facets`). */
export type Facets = SearchResponse["facets"];
/** Metadata filters: key → values (one of which a document must have; every key must match). */
export type MetadataFilters = Record<string, string[]>;
/** `PATCH /api/documents/{id}`: a JSON merge patch of the metadata (null removes a key). */
export type MetadataPatch = Schemas["MetadataPatch"];
export type ExtractionQueued = Schemas["ExtractionQueued"];

// ---- chat ----

export type Thread = Schemas["Thread"];
export type ThreadList = Schemas["ThreadList"];
export type ToolCall = Schemas["ToolCall"];
export type ToolResult = Schemas["ToolResult"];
/** An answer's failure: the chat `error` event, and a stored message's `error`. */
export type ChatError = Schemas["ErrorEvent"];
/** Codes of chat `error` events, e.g. llm_unreachable, llm_timeout, context_overflow, database_unavailable. */
export type ChatErrorCode = ChatError["code"];

export type Message = Schemas["Message"];
/** The `citations` event (and a stored message's `citations`): each cited sentence checked against its passage. */
export type CitationReport = Schemas["CitationsEvent"];
export type CitationCheck = Schemas["CitationCheck"];
export type ThreadDetail = Schemas["ThreadDetail"];

// ---- accounts (docs/ACCOUNTS.md) ----

export type User = Schemas["User"];
export type SessionInfo = Schemas["SessionInfo"];
/** The login page's single sign-on button and password form. */
export type SsoConfig = Schemas["SsoConfig"];
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
export type CollectionDetail = Schemas["CollectionDetail"];

export type EvalRun = Schemas["EvalRun"];
export type EvalRunSummary = Schemas["EvalRunSummary"];
export type EvalRunList = Schemas["EvalRunList"];
export type EvalRunBody = Schemas["EvalRunBody"];
export type EvalRunStarted = Schemas["EvalRunStarted"];
export type EvalConfigResult = Schemas["ConfigResult"];
