// Accounts, sessions, API tokens, admin and collections: the routes of docs/ACCOUNTS.md.
import { json, request } from "./client";
import type { components } from "./schema";
import type {
  Collection,
  CollectionDetail,
  CollectionList,
  Directory,
  MemberRole,
  NewApiToken,
  SessionInfo,
  SignedIn,
  SsoConfig,
  TokenList,
  User,
  UserList,
} from "./types";

type Schemas = components["schemas"];

const id = (s: string) => encodeURIComponent(s);

export const authApi = {
  /** Public: is auth on, must the first account be created, who am I. */
  session: (signal?: AbortSignal) => request<SessionInfo>("/api/auth/session", { signal }),

  /** Public: is single sign-on on (its button's label, why it is unavailable), is the password form on. */
  ssoConfig: (signal?: AbortSignal) => request<SsoConfig>("/api/auth/oidc/config", { signal }),

  /** Create the first (admin) account; 409 `setup_done` once one exists. Sets the session cookie. */
  setup: (username: string, password: string) =>
    request<SignedIn>("/api/auth/setup", json("POST", { username, password })).then((r) => r.user),

  /** 401 `invalid_credentials` for a wrong username or password (never reported as a lost session). */
  login: (username: string, password: string) =>
    request<SignedIn>("/api/auth/login", json("POST", { username, password })).then((r) => r.user),

  logout: () => request<void>("/api/auth/logout", { method: "POST" }),

  /** End every session of the signed-in user, this one too; with `revoke_tokens` every API token too. */
  logoutAll: (revokeTokens = true) =>
    request<void>(`/api/auth/logout-all?revoke_tokens=${revokeTokens}`, { method: "POST" }),

  changePassword: (current_password: string, new_password: string) =>
    request<void>("/api/auth/password", json("POST", { current_password, new_password })),

  listTokens: (signal?: AbortSignal) =>
    request<TokenList>("/api/auth/tokens", { signal }).then((r) => r.tokens),

  /** The answer's `token` is shown this once. */
  createToken: (name: string, expires_in_days: number | null = null) =>
    request<NewApiToken>("/api/auth/tokens", json("POST", { name, expires_in_days })),

  revokeToken: (tokenId: string) => request<void>(`/api/auth/tokens/${id(tokenId)}`, { method: "DELETE" }),

  /** Active users, to pick whom to share a collection with. */
  listUsers: (signal?: AbortSignal) => request<Directory>("/api/users", { signal }).then((r) => r.users),
};

export const adminApi = {
  listUsers: (signal?: AbortSignal) =>
    request<UserList>("/api/admin/users", { signal }).then((r) => r.users),

  createUser: (body: Schemas["NewUser"]) =>
    request<User>("/api/admin/users", json("POST", body)),

  updateUser: (userId: string, patch: Schemas["UserPatch"]) =>
    request<User>(`/api/admin/users/${id(userId)}`, json("PATCH", patch)),

  resetPassword: (userId: string, password: string) =>
    request<void>(`/api/admin/users/${id(userId)}/password`, json("POST", { password })),

  deleteUser: (userId: string) => request<void>(`/api/admin/users/${id(userId)}`, { method: "DELETE" }),
};

export const collectionsApi = {
  list: (signal?: AbortSignal) =>
    request<CollectionList>("/api/collections", { signal }).then((r) => r.collections),

  create: (name: string, description?: string) =>
    request<Collection>("/api/collections", json("POST", description ? { name, description } : { name })),

  get: (collectionId: string, signal?: AbortSignal) =>
    request<CollectionDetail>(`/api/collections/${id(collectionId)}`, { signal }),

  update: (collectionId: string, patch: Schemas["CollectionPatch"]) =>
    request<Collection>(`/api/collections/${id(collectionId)}`, json("PATCH", patch)),

  remove: (collectionId: string) => request<void>(`/api/collections/${id(collectionId)}`, { method: "DELETE" }),

  /** Add a member or change their role (owner only). */
  setMember: (collectionId: string, userId: string, role: MemberRole) =>
    request<void>(`/api/collections/${id(collectionId)}/members/${id(userId)}`, json("PUT", { role })),

  /** Remove a member (owner), or leave (the member themself). */
  removeMember: (collectionId: string, userId: string) =>
    request<void>(`/api/collections/${id(collectionId)}/members/${id(userId)}`, { method: "DELETE" }),

  addDocument: (collectionId: string, documentId: string) =>
    request<void>(`/api/collections/${id(collectionId)}/documents/${id(documentId)}`, { method: "PUT" }),

  removeDocument: (collectionId: string, documentId: string) =>
    request<void>(`/api/collections/${id(collectionId)}/documents/${id(documentId)}`, { method: "DELETE" }),
};
