// Users: the directory every user sees (GET /api/users) and the admin's accounts (/api/admin/users/...).
import { del, get, patch, post, type JsonBody } from "./client";

const one = (userId: string) => ({ params: { path: { user_id: userId } } });

/** Active users, to pick whom to share a collection with. */
export const directoryApi = {
  list: async (signal?: AbortSignal) => (await get("/api/users", { signal })).users,
};

export const adminApi = {
  listUsers: async (signal?: AbortSignal) => (await get("/api/admin/users", { signal })).users,

  createUser: (body: JsonBody<"/api/admin/users", "post">) => post("/api/admin/users", { body }),

  updateUser: (userId: string, body: JsonBody<"/api/admin/users/{user_id}", "patch">) =>
    patch("/api/admin/users/{user_id}", { ...one(userId), body }),

  resetPassword: (userId: string, password: string) =>
    post("/api/admin/users/{user_id}/password", { ...one(userId), body: { password } }),

  deleteUser: (userId: string) => del("/api/admin/users/{user_id}", one(userId)),
};
