import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { authApi } from "../api/auth";
import { ApiError, errorMessage, isSessionLost, onUnauthorized } from "../api/client";
import type { SessionInfo, User } from "../api/types";
import { clearDrafts } from "../lib/drafts";
import { navigate } from "../lib/router";

/** Coming back to the tab re-checks the session at most this often. */
export const SESSION_RECHECK_MS = 10_000;

export type AuthStatus = "loading" | "error" | "ready";

export interface AuthValue {
  status: AuthStatus;
  /** Why the session could not be read (status "error"). */
  error: string | null;
  auth: "on" | "off";
  setupRequired: boolean;
  user: User | null;
  /** Admin pages: the user's flag, or everything with auth off (the built-in local admin). */
  isAdmin: boolean;
  /** The session ended while the app was in use (a 401): the login page says so. */
  expired: boolean;
  /** Username of the user whose session ended, to prefill the login form. */
  lastUsername: string | null;
  /** After a successful setup or login. */
  signedIn: (user: User) => void;
  /** POST /api/auth/logout (or logout-all, which also revokes API tokens unless `revokeTokens` is false),
   * forget drafts, back to the login page. */
  logout: (everywhere?: boolean, revokeTokens?: boolean) => Promise<void>;
  /** Read GET /api/auth/session again. */
  recheck: () => Promise<void>;
}

const noop = async () => {};

/** Outside an AuthProvider (unit tests of single pages): auth off, nobody signed in. */
const AuthContext = createContext<AuthValue>({
  status: "ready",
  error: null,
  auth: "off",
  setupRequired: false,
  user: null,
  isAdmin: true,
  expired: false,
  lastUsername: null,
  signedIn: () => {},
  logout: noop,
  recheck: noop,
});

export const useAuth = () => useContext(AuthContext);

interface State {
  status: AuthStatus;
  error: string | null;
  session: SessionInfo | null;
  expired: boolean;
  lastUsername: string | null;
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<State>({
    status: "loading",
    error: null,
    session: null,
    expired: false,
    lastUsername: null,
  });
  const lastCheck = useRef(0);

  const load = useCallback(async (initial: boolean) => {
    lastCheck.current = Date.now();
    try {
      const session = await authApi.session();
      setState((s) => {
        const had = s.session?.user ?? null;
        const lost = !!had && !session.user && session.auth === "on";
        return {
          status: "ready",
          error: null,
          session,
          expired: lost || (s.expired && !session.user),
          lastUsername: lost ? had.username : s.lastUsername,
        };
      });
    } catch (e) {
      // An older server without accounts: behave as with auth off.
      if (e instanceof ApiError && e.status === 404) {
        setState((s) => ({ ...s, status: "ready", session: { auth: "off", setup_required: false, user: null } }));
      } else if (initial) {
        setState((s) => ({ ...s, status: "error", error: `Couldn't reach the server: ${errorMessage(e)}` }));
      } // a failed re-check changes nothing
    }
  }, []);

  useEffect(() => {
    void load(true);
  }, [load]);

  // A 401 from any call: the session ended (expired, revoked, user disabled) → the login page.
  useEffect(
    () =>
      onUnauthorized((e) => {
        if (!isSessionLost(e)) return;
        setState((s) => {
          if (!s.session || s.session.auth === "off" || !s.session.user) return s;
          return { ...s, expired: true, lastUsername: s.session.user.username, session: { ...s.session, user: null } };
        });
      }),
    [],
  );

  // Coming back to the tab: is the session still there?
  useEffect(() => {
    const check = () => {
      if (document.visibilityState === "hidden" || Date.now() - lastCheck.current < SESSION_RECHECK_MS) return;
      void load(false);
    };
    window.addEventListener("focus", check);
    document.addEventListener("visibilitychange", check);
    return () => {
      window.removeEventListener("focus", check);
      document.removeEventListener("visibilitychange", check);
    };
  }, [load]);

  const signedIn = useCallback((user: User) => {
    lastCheck.current = Date.now();
    setState((s) => ({
      status: "ready",
      error: null,
      session: { auth: s.session?.auth ?? "on", setup_required: false, user },
      expired: false,
      lastUsername: null,
    }));
  }, []);

  const logout = useCallback(async (everywhere = false, revokeTokens = true) => {
    try {
      await (everywhere ? authApi.logoutAll(revokeTokens) : authApi.logout());
    } catch {
      /* already logged out (401) or offline: the page still forgets the user */
    }
    clearDrafts();
    setState((s) => ({
      ...s,
      expired: false,
      lastUsername: null,
      session: s.session && { ...s.session, user: null },
    }));
    navigate("/", { replace: true });
  }, []);

  const recheck = useCallback(() => load(false), [load]);

  const value = useMemo<AuthValue>(() => {
    const session = state.session;
    const auth = session?.auth ?? "on";
    const user = session?.user ?? null;
    return {
      status: state.status,
      error: state.error,
      auth,
      setupRequired: !!session?.setup_required,
      user,
      isAdmin: user ? user.is_admin : auth === "off",
      expired: state.expired,
      lastUsername: state.lastUsername,
      signedIn,
      logout,
      recheck,
    };
  }, [state, signedIn, logout, recheck]);

  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}
