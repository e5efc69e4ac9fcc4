-- Single sign-on (OpenID Connect): which provider identity (issuer, subject) is which user, and the sign-ins
-- under way (one row per authorization request: single use, bound to the browser that started it, expiring).

CREATE TABLE oidc_identities (
    issuer         text NOT NULL,
    subject        text NOT NULL,
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email          text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    last_login_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX oidc_identities_user_idx ON oidc_identities (user_id);

-- Only digests of the state and of the browser's cookie are kept; the nonce and the PKCE verifier are needed
-- in clear at the callback and live at most OIDC_FLOW_TTL (10 minutes).
CREATE TABLE oidc_flows (
    state_hash     bytea PRIMARY KEY,
    browser_hash   bytea NOT NULL,
    nonce          text NOT NULL,
    code_verifier  text NOT NULL,
    redirect_uri   text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL
);
CREATE INDEX oidc_flows_expires_idx ON oidc_flows (expires_at);
