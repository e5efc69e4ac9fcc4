"""The pure parts of single sign-on: the discovery document's checks, the ID token's claims, groups and names
(the flows over HTTP are in tests/integration/test_oidc.py)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ragchat.accounts.oidc import check_claims, parse_discovery, token_header
from ragchat.accounts.oidc_service import Identity, groups_of, identity_of, in_group, username_candidates
from ragchat.core.errors import SsoFailed, SsoUnavailable

ISS = "https://sso.example.org/realms/acme"
DOC = {
    "issuer": ISS,
    "authorization_endpoint": ISS + "/auth",
    "token_endpoint": ISS + "/token",
    "jwks_uri": ISS + "/certs",
    "id_token_signing_alg_values_supported": ["RS256", "HS256", "none"],
}


def test_discovery_keeps_only_asymmetric_algorithms_and_https_endpoints() -> None:
    provider = parse_discovery(DOC, ISS + "/")  # a trailing slash in OIDC_ISSUER does not matter
    assert provider.algorithms == ("RS256",) and provider.userinfo_endpoint is None
    with pytest.raises(SsoUnavailable, match="ragchat needs one of"):
        parse_discovery({**DOC, "id_token_signing_alg_values_supported": ["HS256", "none"]}, ISS)
    with pytest.raises(SsoUnavailable, match="token_endpoint is missing or not an https URL"):
        parse_discovery({**DOC, "token_endpoint": "http://sso.example.org/token"}, ISS)
    with pytest.raises(SsoUnavailable, match="names the issuer"):
        parse_discovery({**DOC, "issuer": "https://evil.example"}, ISS)
    # http is allowed to a provider on this machine only (Authlib's rule)
    local = "http://127.0.0.1:8080"
    doc = {k: v.replace(ISS, local) if isinstance(v, str) else v for k, v in DOC.items()}
    assert parse_discovery(doc, local).token_endpoint == local + "/token"


def claims(**over: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISS, "aud": "rc", "sub": "s1", "iat": now, "exp": now + 60, "nonce": "n1", **over}


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"aud": "other"}, "issued for another client"),
        ({"aud": ["rc", "other"]}, "azp"),
        ({"azp": "other"}, "azp"),
        ({"exp": int(time.time()) - 120}, "expired"),
        ({"exp": "tomorrow"}, "no expiry"),
        ({"exp": True}, "no expiry"),
        ({"iat": int(time.time()) + 3600}, "in the future"),
        ({"nbf": int(time.time()) + 3600}, "not valid yet"),
        ({"nonce": "n2"}, "nonce does not match"),
        ({"nonce": None}, "nonce does not match"),
        ({"iss": ISS + "/"}, "issued by"),
        ({"sub": ""}, "subject"),
        ({"sub": "a\x00b"}, "subject"),
        ({"sub": 42}, "subject"),
    ],
)
def test_claims_that_must_not_sign_in(over: dict[str, Any], message: str) -> None:
    with pytest.raises(SsoFailed, match=message):
        check_claims(claims(**over), issuer=ISS, client_id="rc", nonce="n1", now=time.time())


def test_claims_that_sign_in() -> None:
    check_claims(claims(), issuer=ISS, client_id="rc", nonce="n1", now=time.time())
    check_claims(claims(aud=["rc", "x"], azp="rc"), issuer=ISS, client_id="rc", nonce="n1", now=time.time())
    check_claims(claims(exp=int(time.time()) - 30), issuer=ISS, client_id="rc", nonce="n1", now=time.time())  # skew


@pytest.mark.parametrize("token", ["", "a.b", "a.b.c.d", "!!!.e30.sig", "bnVsbA.e30.sig", "x" * 40000])
def test_unreadable_tokens(token: str) -> None:
    with pytest.raises(SsoFailed):
        token_header(token)


def test_groups_roles_and_names() -> None:
    c = {"groups": ["/ragchat/admins", "staff"], "realm_access": {"roles": ["admin"]}, "roles": "one"}
    assert groups_of(c, "groups") == ["/ragchat/admins", "staff"]
    assert groups_of(c, "realm_access.roles") == ["admin"]
    assert groups_of(c, "roles") == ["one"] and groups_of(c, "missing.path") == []
    assert in_group(["/admins"], "admins") and in_group(["admins"], "/admins") and not in_group(["staff"], "admins")

    unverified = identity_of({"sub": "s", "email": "boss@example.com", "email_verified": False}, ISS, "groups")
    assert unverified.email is None
    # only the JSON boolean true verifies an address (issue 43: "true" and 1 do not); the one normalisation is
    # lower-casing ASCII (docs/ACCOUNTS.md)
    for not_true in ("true", 1, "1", None):
        claims = {"sub": "s", "email": "boss@example.com", "email_verified": not_true}
        assert identity_of(claims, ISS, "groups").email is None, not_true
    verified = identity_of({"sub": "s", "email": "Boss@Example.com", "email_verified": True}, ISS, "groups")
    assert verified.email == "boss@example.com"

    # a name that is not a verified email never has an '@': a later verified email cannot collide with it
    names = username_candidates(Identity(ISS, "s", None, "alice@contoso.com", []))
    assert names[0] == "alice-contoso.com" and all("@" not in n for n in names)
    assert username_candidates(Identity(ISS, "s", "a@b.org", None, []))[0] == "a@b.org"
    assert username_candidates(Identity(ISS, "s", None, "bad name!", []))[0].startswith("sso-")
