import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { jsonResponse } from "../test/fixtures";
import { apiError, axeViolations, mockServer, noContent, on, session, user } from "../test/server";

beforeEach(() => {
  window.history.replaceState(null, "", "/");
  window.sessionStorage.clear();
});
afterEach(() => vi.unstubAllGlobals());

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

describe("first run: create the admin account", () => {
  it("shows the setup page, checks the passwords, creates the admin and opens the app", async () => {
    const admin = user({ username: "boss" });
    const srv = mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ setup_required: true, user: null }))),
      on("POST", "/api/auth/setup", () => jsonResponse({ user: admin }, 201)),
    );
    render(<App />);
    expect(await screen.findByRole("heading", { name: "Create the admin account" })).toBeInTheDocument();
    expect(screen.getByTestId("setup-username")).toHaveAttribute("autocomplete", "username");
    expect(screen.getByTestId("setup-password")).toHaveAttribute("autocomplete", "new-password");
    expect(await axeViolations()).toEqual([]);

    type("setup-username", "boss");
    type("setup-password", "correct horse");
    type("setup-confirm", "correct hose");
    fireEvent.click(screen.getByTestId("setup-submit"));
    expect(screen.getByTestId("setup-error")).toHaveTextContent("The passwords do not match.");
    expect(srv.find("POST", "/api/auth/setup")).toHaveLength(0);

    type("setup-confirm", "correct horse");
    fireEvent.click(screen.getByTestId("setup-submit"));
    expect(await screen.findByTestId("nav-user")).toHaveTextContent("boss");
    expect(srv.find("POST", "/api/auth/setup")[0].body).toEqual({ username: "boss", password: "correct horse" });
    expect(screen.getByTestId("nav-admin")).toBeInTheDocument();
  });

  it("sends the setup token of the link the server printed, then drops it from the address", async () => {
    window.history.replaceState(null, "", "/?setup_token=s3cret-token");
    const srv = mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ setup_required: true, user: null }))),
      on("POST", "/api/auth/setup", () => jsonResponse({ user: user({ username: "boss" }) }, 201)),
    );
    render(<App />);
    await screen.findByTestId("setup-form");
    type("setup-username", "boss");
    type("setup-password", "correct horse");
    type("setup-confirm", "correct horse");
    fireEvent.click(screen.getByTestId("setup-submit"));
    expect(await screen.findByTestId("nav-user")).toHaveTextContent("boss");
    expect(srv.find("POST", "/api/auth/setup")[0].body).toEqual({
      username: "boss",
      password: "correct horse",
      setup_token: "s3cret-token",
    });
    expect(window.location.search).toBe("");
  });

  it("says so when the admin exists already (409 setup_done)", async () => {
    mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ setup_required: true, user: null }))),
      on("POST", "/api/auth/setup", () => apiError(409, "setup_done", "the admin account exists already: log in")),
    );
    render(<App />);
    await screen.findByTestId("setup-form");
    type("setup-username", "boss");
    type("setup-password", "12345678");
    type("setup-confirm", "12345678");
    fireEvent.click(await screen.findByTestId("setup-submit"));
    expect(await screen.findByTestId("setup-error")).toHaveTextContent("An admin account already exists");
  });
});

describe("login", () => {
  it("is axe-clean, labelled, and has autocomplete hints", async () => {
    mockServer(on("GET", "/api/auth/session", () => jsonResponse(session({ user: null }))));
    render(<App />);
    await screen.findByTestId("login-form");
    expect(screen.getByLabelText("Username")).toHaveAttribute("autocomplete", "username");
    expect(screen.getByLabelText("Password")).toHaveAttribute("autocomplete", "current-password");
    expect(screen.queryByTestId("app-nav")).toBeNull();
    expect(await axeViolations()).toEqual([]);
  });

  it("shows the server's message for wrong credentials without leaving the page, then logs in", async () => {
    let release!: () => void;
    const attempts: unknown[] = [];
    mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ user: null }))),
      on("POST", "/api/auth/login", async (c) => {
        attempts.push(c.body);
        if (attempts.length === 1) return apiError(401, "invalid_credentials", "wrong username or password");
        await new Promise<void>((r) => (release = r));
        return jsonResponse({ user: user({ username: "alice", is_admin: false }) });
      }),
    );
    render(<App />);
    await screen.findByTestId("login-form");
    type("login-username", "alice");
    type("login-password", "nope-nope");
    fireEvent.click(screen.getByTestId("login-submit"));
    expect(await screen.findByTestId("login-error")).toHaveTextContent("Wrong username or password.");
    expect(screen.getByTestId("login-form")).toBeInTheDocument(); // a 401 invalid_credentials is not a lost session
    expect(screen.getByTestId("login-password")).toHaveValue("");
    expect(await axeViolations()).toEqual([]);

    type("login-password", "right-password");
    fireEvent.click(screen.getByTestId("login-submit"));
    await waitFor(() => expect(screen.getByTestId("login-submit")).toBeDisabled());
    release();
    expect(await screen.findByTestId("nav-user")).toHaveTextContent("alice");
    expect(attempts[1]).toEqual({ username: "alice", password: "right-password" });
    // Not an admin: no Admin link.
    expect(screen.queryByTestId("nav-admin")).toBeNull();
    expect(screen.getByTestId("nav-account")).toBeInTheDocument();
    expect(screen.getByTestId("nav-collections")).toBeInTheDocument();
  });

  it("offers single sign-on, says why it is unavailable, and hides the password form when local login is off", async () => {
    window.history.replaceState(null, "", "/?sso_error=call%20555-0100%20now");
    mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ user: null }))),
      on("GET", "/api/auth/oidc/config", () =>
        jsonResponse({
          sso: true,
          label: "Sign in with Acme ID",
          unavailable: null,
          local_login: false,
          error: "the ID token has expired",
        }),
      ),
    );
    const { unmount } = render(<App />);
    const button = await screen.findByTestId("sso-login");
    expect(button).toHaveTextContent("Sign in with Acme ID");
    expect(button).toHaveAttribute("href", "/api/auth/oidc/login");
    expect(screen.getByTestId("sso-error")).toHaveTextContent("Single sign-on failed: the ID token has expired");
    expect(screen.queryByText(/555-0100/)).toBeNull(); // a message in the URL is never shown
    expect(screen.queryByTestId("login-form")).toBeNull();
    expect(await axeViolations()).toEqual([]);
    unmount();

    mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ user: null }))),
      on("GET", "/api/auth/oidc/config", () =>
        jsonResponse({ sso: true, label: "Sign in with Acme ID", unavailable: "it did not answer", local_login: true }),
      ),
    );
    render(<App />);
    expect(await screen.findByTestId("sso-unavailable")).toHaveTextContent("SSO unavailable: it did not answer");
    expect(screen.queryByTestId("sso-login")).toBeNull();
    expect(screen.getByTestId("login-form")).toBeInTheDocument();
  });

  it("says when to try again after too many attempts (429)", async () => {
    mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ user: null }))),
      on("POST", "/api/auth/login", () =>
        apiError(429, "rate_limited", "too many login attempts", { "Retry-After": "42" }),
      ),
    );
    render(<App />);
    await screen.findByTestId("login-form");
    type("login-username", "alice");
    type("login-password", "whatever1");
    fireEvent.click(await screen.findByTestId("login-submit"));
    expect(await screen.findByTestId("login-error")).toHaveTextContent("Too many login attempts. Try again in 42 s.");
  });

  it("logs out: POST /api/auth/logout, then the login page", async () => {
    const srv = mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session())),
      on("POST", "/api/auth/logout", () => noContent()),
    );
    window.history.replaceState(null, "", "/documents");
    render(<App />);
    fireEvent.click(await screen.findByTestId("nav-logout"));
    expect(await screen.findByTestId("login-form")).toBeInTheDocument();
    expect(srv.find("POST", "/api/auth/logout")).toHaveLength(1);
    expect(screen.queryByTestId("session-expired")).toBeNull();
    expect(window.location.pathname).toBe("/");
  });
});

describe("auth off", () => {
  it("has no login, no user and no logout; the account page says auth is off", async () => {
    mockServer(
      on("GET", "/api/auth/session", () =>
        jsonResponse(session({ auth: "off", user: user({ username: "local", is_admin: true }) })),
      ),
    );
    render(<App />);
    expect(await screen.findByTestId("app-nav")).toBeInTheDocument();
    expect(screen.queryByTestId("nav-logout")).toBeNull();
    expect(screen.queryByTestId("nav-user")).toBeNull();
    fireEvent.click(screen.getByTestId("nav-account"));
    expect(await screen.findByTestId("auth-off")).toHaveTextContent("Authentication is off");
  });

  it("never asks to create an admin account (even when no account exists yet)", async () => {
    mockServer(on("GET", "/api/auth/session", () => jsonResponse(session({ auth: "off", setup_required: true, user: null }))));
    render(<App />);
    expect(await screen.findByTestId("empty-chat")).toBeInTheDocument();
    expect(screen.queryByTestId("setup-form")).toBeNull();
  });

  it("an older server without /api/auth/session (404) works as before", async () => {
    mockServer(on("GET", "/api/auth/session", () => apiError(404, "not_found", "Not Found")));
    render(<App />);
    expect(await screen.findByTestId("empty-chat")).toBeInTheDocument();
  });
});
