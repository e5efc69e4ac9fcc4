import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import type { AdminUser } from "../api/types";
import { jsonResponse } from "../test/fixtures";
import { apiError, axeViolations, mockServer, noContent, on, session, user } from "../test/server";

const row = (over: Partial<AdminUser>): AdminUser => ({
  ...user(),
  last_seen_at: "2024-01-02T00:00:00Z",
  documents: 3,
  ...over,
});
const USERS = [row({}), row({ id: "u-bob", username: "bob", is_admin: false, documents: 0, last_seen_at: null })];

beforeEach(() => window.history.replaceState(null, "", "/admin"));
afterEach(() => vi.unstubAllGlobals());

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });
const rowOf = (username: string) => screen.getAllByTestId("admin-user-row").find((r) => r.dataset.username === username)!;

function server() {
  return mockServer(
    on("GET", "/api/auth/session", () => jsonResponse(session())),
    on("GET", "/api/admin/users", () => jsonResponse({ users: USERS })),
    on("POST", "/api/admin/users", (c) => {
      const b = c.body as { username: string; is_admin: boolean };
      return b.username === "bob"
        ? apiError(409, "conflict", "the username 'bob' is taken")
        : jsonResponse(user({ id: "u-new", username: b.username, is_admin: b.is_admin }), 201);
    }),
    on("PATCH", "/api/admin/users/u-admin", () =>
      apiError(403, "forbidden", "you cannot disable or demote yourself (ask another admin)"),
    ),
    on("PATCH", "/api/admin/users/u-bob", (c) => jsonResponse({ ...USERS[1], ...(c.body as object) })),
    on("POST", "/api/admin/users/u-bob/password", () => noContent()),
    on("DELETE", "/api/admin/users/u-bob", () => noContent()),
  );
}

describe("AdminPage", () => {
  it("lists users with admin, disabled, documents, created and last seen", async () => {
    server();
    render(<App />);
    await screen.findAllByTestId("admin-user-row");
    expect(rowOf("admin")).toHaveTextContent("Admin");
    expect(rowOf("admin")).toHaveTextContent("(you)");
    expect(rowOf("bob")).toHaveAttribute("data-admin", "false");
    expect(rowOf("bob")).toHaveTextContent("Never");
    expect(screen.getByTestId("nav-admin")).toHaveAttribute("aria-current", "page");
    expect(await axeViolations()).toEqual([]);
  });

  it("adds a user, and shows the server's refusal for a taken name", async () => {
    const srv = server();
    render(<App />);
    await screen.findAllByTestId("admin-user-row");
    type("admin-add-username", "bob");
    type("admin-add-password", "password-1");
    fireEvent.click(screen.getByTestId("admin-add-submit"));
    expect(await screen.findByTestId("admin-error")).toHaveTextContent("The username 'bob' is taken.");

    type("admin-add-username", "carol");
    fireEvent.click(screen.getByTestId("admin-add-admin"));
    fireEvent.click(screen.getByTestId("admin-add-submit"));
    await waitFor(() => expect(screen.getAllByTestId("admin-user-row")).toHaveLength(3));
    expect(rowOf("carol")).toHaveAttribute("data-admin", "true");
    expect(srv.find("POST", "/api/admin/users").at(-1)!.body).toEqual({
      username: "carol",
      password: "password-1",
      is_admin: true,
    });
    expect(screen.getByTestId("admin-add-username")).toHaveValue("");
  });

  it("checks a new user's password length before sending", async () => {
    const srv = server();
    render(<App />);
    await screen.findAllByTestId("admin-user-row");
    type("admin-add-username", "dave");
    type("admin-add-password", "short");
    fireEvent.click(screen.getByTestId("admin-add-submit"));
    expect(await screen.findByTestId("admin-error")).toHaveTextContent("at least 8 characters");
    expect(srv.find("POST", "/api/admin/users")).toHaveLength(0);
  });

  it("disables and promotes a user; disabling yourself shows the server's message", async () => {
    const srv = server();
    render(<App />);
    await screen.findAllByTestId("admin-user-row");
    fireEvent.click(within(rowOf("admin")).getByTestId("admin-disable"));
    expect(await screen.findByTestId("admin-error")).toHaveTextContent("You cannot disable or demote yourself");

    fireEvent.click(within(rowOf("bob")).getByTestId("admin-disable"));
    await waitFor(() => expect(rowOf("bob")).toHaveAttribute("data-disabled", "true"));
    expect(srv.find("PATCH", "/api/admin/users/u-bob")[0].body).toEqual({ disabled: true });
    expect(within(rowOf("bob")).getByTestId("admin-disable")).toHaveTextContent("Enable");

    fireEvent.click(within(rowOf("bob")).getByTestId("admin-toggle-admin"));
    await waitFor(() => expect(rowOf("bob")).toHaveAttribute("data-admin", "true"));
    expect(srv.find("PATCH", "/api/admin/users/u-bob")[1].body).toEqual({ is_admin: true });
  });

  it("resets a password and deletes a user after confirmation", async () => {
    const srv = server();
    render(<App />);
    await screen.findAllByTestId("admin-user-row");
    fireEvent.click(within(rowOf("bob")).getByTestId("admin-reset"));
    type("admin-reset-password", "brand-new-pass");
    fireEvent.click(within(rowOf("bob")).getByTestId("admin-reset-submit"));
    expect(await screen.findByTestId("admin-notice")).toHaveTextContent("New password set for bob");
    expect(srv.find("POST", "/api/admin/users/u-bob/password")[0].body).toEqual({ password: "brand-new-pass" });
    expect(screen.queryByTestId("admin-reset-password")).toBeNull();

    fireEvent.click(within(rowOf("bob")).getByTestId("admin-delete"));
    expect(srv.find("DELETE", "/api/admin/users/u-bob")).toHaveLength(0);
    fireEvent.click(within(rowOf("bob")).getByTestId("admin-delete-confirm"));
    await waitFor(() => expect(screen.getAllByTestId("admin-user-row")).toHaveLength(1));
    expect(srv.find("DELETE", "/api/admin/users/u-bob")).toHaveLength(1);
  });

  it("is only for admins", async () => {
    const srv = mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ user: user({ is_admin: false }) }))),
    );
    render(<App />);
    expect(await screen.findByTestId("admin-forbidden")).toBeInTheDocument();
    expect(screen.queryByTestId("nav-admin")).toBeNull();
    expect(srv.find("GET", "/api/admin/users")).toHaveLength(0);
  });
});
