import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import type { ApiToken } from "../api/types";
import { jsonResponse } from "../test/fixtures";
import { apiError, axeViolations, mockServer, noContent, on, session, user } from "../test/server";

const alice = user({ id: "u-alice", username: "alice", is_admin: false });
const token = (over: Partial<ApiToken> = {}): ApiToken => ({
  id: "t1",
  name: "laptop",
  prefix: "rc_ab12",
  created_at: "2024-01-01T00:00:00Z",
  last_used_at: null,
  expires_at: null,
  expired: false,
  ...over,
});

beforeEach(() => window.history.replaceState(null, "", "/account"));
afterEach(() => vi.unstubAllGlobals());

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

function server(tokens: ApiToken[] = [token()]) {
  return mockServer(
    on("GET", "/api/auth/session", () => jsonResponse(session({ user: alice }))),
    on("GET", "/api/auth/tokens", () => jsonResponse({ tokens })),
    on("POST", "/api/auth/tokens", (c) =>
      jsonResponse({ ...token({ id: "t2", name: (c.body as { name: string }).name, prefix: "rc_zz99" }), token: "rc_zz99-secret-value" }, 201),
    ),
    on("DELETE", /^\/api\/auth\/tokens\//, () => noContent()),
    on("POST", "/api/auth/password", (c) =>
      (c.body as { current_password: string }).current_password === "old-password"
        ? noContent()
        : apiError(401, "invalid_credentials", "the current password is wrong"),
    ),
    on("POST", "/api/auth/logout-all", () => noContent()),
  );
}

describe("AccountPage", () => {
  it("lists tokens; a new token is shown once with a warning; revoke asks first", async () => {
    const srv = server();
    render(<App />);
    const row = await screen.findByTestId("token-row");
    expect(row).toHaveTextContent("laptop");
    expect(row).toHaveTextContent("rc_ab12");
    expect(row).toHaveTextContent("never used");
    expect(await axeViolations()).toEqual([]);

    type("token-name", "ci script");
    fireEvent.click(screen.getByTestId("token-create"));
    expect(await screen.findByTestId("token-secret")).toHaveValue("rc_zz99-secret-value");
    expect(screen.getByTestId("token-secret-box")).toHaveTextContent("won't be shown again");
    expect(srv.find("POST", "/api/auth/tokens")[0].body).toEqual({ name: "ci script", expires_in_days: 90 });
    expect(screen.getAllByTestId("token-row")).toHaveLength(2);
    fireEvent.click(screen.getByTestId("token-secret-done"));
    expect(screen.queryByTestId("token-secret")).toBeNull();

    const laptop = screen.getAllByTestId("token-row").find((r) => r.dataset.tokenId === "t1")!;
    fireEvent.click(within(laptop).getByTestId("token-revoke"));
    expect(srv.find("DELETE", "/api/auth/tokens/t1")).toHaveLength(0);
    fireEvent.click(within(laptop).getByTestId("token-revoke-confirm"));
    await waitFor(() => expect(screen.getAllByTestId("token-row")).toHaveLength(1));
    expect(srv.find("DELETE", "/api/auth/tokens/t1")).toHaveLength(1);
  });

  it("copies the new token to the clipboard", async () => {
    server([]);
    const writeText = vi.fn().mockResolvedValue(undefined);
    vi.stubGlobal("navigator", { ...navigator, clipboard: { writeText } });
    render(<App />);
    expect(await screen.findByTestId("tokens-empty")).toBeInTheDocument();
    type("token-name", "x");
    fireEvent.click(screen.getByTestId("token-create"));
    fireEvent.click(await screen.findByTestId("token-copy"));
    expect(writeText).toHaveBeenCalledWith("rc_zz99-secret-value");
    expect(await screen.findByText("Copied.")).toBeInTheDocument();
  });

  it("changes the password; a wrong current password is shown and does not log out", async () => {
    const srv = server();
    render(<App />);
    const form = await screen.findByTestId("account-password-form");
    type("password-current", "old-password");
    type("password-new", "new-password-1");
    type("password-confirm", "new-password-2");
    fireEvent.submit(form);
    expect(screen.getByTestId("password-result")).toHaveTextContent("The passwords do not match.");

    type("password-current", "guess");
    type("password-confirm", "new-password-1");
    fireEvent.submit(form);
    expect(await screen.findByTestId("password-result")).toHaveTextContent("The current password is wrong.");
    expect(screen.getByTestId("password-result")).toHaveAttribute("data-ok", "false");
    expect(screen.queryByTestId("login-form")).toBeNull();

    type("password-current", "old-password");
    fireEvent.submit(form);
    await waitFor(() => expect(screen.getByTestId("password-result")).toHaveAttribute("data-ok", "true"));
    expect(srv.find("POST", "/api/auth/password").at(-1)!.body).toEqual({
      current_password: "old-password",
      new_password: "new-password-1",
    });
    expect(screen.getByTestId("password-current")).toHaveValue("");
  });

  it("logs out everywhere", async () => {
    const srv = server();
    render(<App />);
    fireEvent.click(await screen.findByTestId("logout-all"));
    expect(await screen.findByTestId("login-form")).toBeInTheDocument();
    expect(srv.find("POST", "/api/auth/logout-all")).toHaveLength(1);
    expect(srv.find("POST", "/api/auth/logout-all")[0]!.url).toMatch(/\?revoke_tokens=true$/); // default on
  });

  it("logs out everywhere keeping API tokens when the box is unticked", async () => {
    const srv = server();
    render(<App />);
    const box = await screen.findByTestId("logout-all-revoke-tokens");
    expect(box).toBeChecked();
    fireEvent.click(box);
    fireEvent.click(screen.getByTestId("logout-all"));
    expect(await screen.findByTestId("login-form")).toBeInTheDocument();
    expect(srv.find("POST", "/api/auth/logout-all")[0]!.url).toMatch(/\?revoke_tokens=false$/);
  });

  it("creates tokens with an expiry and shows expired ones", async () => {
    const srv = server([token({ expires_at: "2024-02-01T00:00:00Z", expired: true })]);
    render(<App />);
    expect(await screen.findByTestId("token-expired")).toHaveTextContent("expired");
    type("token-name", "ci");
    fireEvent.click(screen.getByTestId("token-create"));
    await screen.findByTestId("token-secret-box");
    expect(srv.find("POST", "/api/auth/tokens")[0]!.body).toEqual({ name: "ci", expires_in_days: 90 });
    type("token-expiry", "");
    type("token-name", "forever");
    fireEvent.click(screen.getByTestId("token-create"));
    await waitFor(() => expect(srv.find("POST", "/api/auth/tokens")).toHaveLength(2));
    expect(srv.find("POST", "/api/auth/tokens")[1]!.body).toEqual({ name: "forever", expires_in_days: null });
  });
});
