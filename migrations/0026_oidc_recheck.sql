-- Single sign-on: re-checking a signed-in user at the identity provider (docs/ACCOUNTS.md, "Single sign-on").
-- The provider's latest refresh token (and access token, used when it issued no refresh token) stay on the
-- server: no route ever returns them. `checked_at` is the provider's last yes; `refused_at` its no (invalid_grant,
-- 401): while it is set the user's sessions and API tokens answer 401, until a sign-in through the provider
-- succeeds again.

ALTER TABLE oidc_identities
    ADD COLUMN refresh_token  text,
    ADD COLUMN access_token   text,
    ADD COLUMN checked_at     timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN refused_at     timestamptz,
    ADD COLUMN refused_reason text;

CREATE INDEX oidc_identities_refused_idx ON oidc_identities (user_id) WHERE refused_at IS NOT NULL;
