import { act, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { jsonResponse } from "../test/fixtures";
import { apiError, mockServer, noContent, on, session, user } from "../test/server";
import { SESSION_RECHECK_MS } from "./AuthContext";

const alice = user({ id: "u-alice", username: "alice", is_admin: false });
const DRAFT = "What does the handbook say about holidays?";

beforeEach(() => {
  window.history.replaceState(null, "", "/");
  window.sessionStorage.clear();
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

/** The server: alice is signed in until `expire()`; logging in again brings her back. */
function server() {
  let signedIn = true;
  const srv = mockServer(
    on("GET", "/api/auth/session", () => jsonResponse(session({ user: signedIn ? alice : null }))),
    on("POST", "/api/auth/login", () => {
      signedIn = true;
      return jsonResponse({ user: alice });
    }),
    on("POST", "/api/auth/logout", () => {
      signedIn = false;
      return noContent();
    }),
    on("POST", "/api/chat", () => apiError(401, "unauthorized", "your session has ended: log in again")),
  );
  return { ...srv, expire: () => (signedIn = false) };
}

async function logInAgain() {
  expect(screen.getByTestId("login-username")).toHaveValue("alice"); // prefilled
  fireEvent.change(screen.getByTestId("login-password"), { target: { value: "alice-password" } });
  fireEvent.click(screen.getByTestId("login-submit"));
  return screen.findByTestId("composer-input");
}

describe("the session ends mid-use", () => {
  it("a 401 on send shows the login page and keeps the unsent message in the composer", async () => {
    const srv = server();
    render(<App />);
    const box = await screen.findByTestId("composer-input");
    fireEvent.change(box, { target: { value: DRAFT } });
    srv.expire();
    fireEvent.keyDown(box, { key: "Enter" });

    expect(await screen.findByTestId("login-form")).toBeInTheDocument();
    expect(screen.getByTestId("session-expired")).toHaveTextContent("Your session has ended");
    expect(screen.queryByTestId("app-nav")).toBeNull();
    expect(window.sessionStorage.getItem("ragchat:draft:u-alice:new")).toBe(DRAFT);

    expect(await logInAgain()).toHaveValue(DRAFT);
    expect(srv.find("POST", "/api/auth/login")[0].body).toEqual({ username: "alice", password: "alice-password" });
  });

  it("a draft being typed survives the login page (session re-checked when the tab regains focus)", async () => {
    const srv = server();
    render(<App />);
    const box = await screen.findByTestId("composer-input");
    fireEvent.change(box, { target: { value: "half a thought" } });

    srv.expire();
    const later = Date.now() + SESSION_RECHECK_MS + 1000;
    vi.spyOn(Date, "now").mockReturnValue(later);
    act(() => {
      window.dispatchEvent(new Event("focus"));
    });
    expect(await screen.findByTestId("session-expired")).toBeInTheDocument();
    expect(await logInAgain()).toHaveValue("half a thought");
    expect(srv.find("POST", "/api/chat")).toHaveLength(0);
  });

  it("any other call answering 401 unauthorized also leads to the login page", async () => {
    const srv = mockServer(
      on("GET", "/api/auth/session", () => jsonResponse(session({ user: alice }))),
      // the new chat's empty state counts the documents first; the session ends after that
      on("GET", "/api/documents", () =>
        srv.find("GET", "/api/documents").length <= 1
          ? jsonResponse({ documents: [], total: 3 })
          : apiError(401, "unauthorized", "your session has ended: log in again"),
      ),
    );
    render(<App />);
    expect(await screen.findByTestId("empty-chat-library")).toHaveAttribute("data-count", "3");
    fireEvent.click(await screen.findByTestId("nav-documents"));
    expect(await screen.findByTestId("session-expired")).toBeInTheDocument();
    expect(window.location.pathname).toBe("/documents"); // logging in again returns here
    expect(srv.find("GET", "/api/documents")).toHaveLength(2);
  });

  it("an explicit logout forgets the drafts", async () => {
    server();
    render(<App />);
    fireEvent.change(await screen.findByTestId("composer-input"), { target: { value: "private draft" } });
    expect(window.sessionStorage.getItem("ragchat:draft:u-alice:new")).toBe("private draft");
    fireEvent.click(screen.getByTestId("nav-logout"));
    expect(await screen.findByTestId("login-form")).toBeInTheDocument();
    expect(screen.queryByTestId("session-expired")).toBeNull();
    expect(window.sessionStorage.getItem("ragchat:draft:u-alice:new")).toBeNull();
  });
});
