"""Settings groups of the server and its users: HTTP, accounts, single sign-on, limits, the audit log."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from ragchat.settings.group import Group


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: a server bound there is reachable from this machine only."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.strip().lower() == "localhost"


class ServerSettings(Group):
    """Settings group: HOST, PORT, the web client, request bodies and the browser protections."""

    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    client_dist: Path | None = None  # built web client; default: the installed package's copy, else <repo>/client/dist
    # request bodies of JSON routes (chat, search, OpenAI /v1, accounts…); refused while streaming (413)
    max_json_kb: int = Field(default=1024, ge=16)
    # Host headers accepted (DNS-rebinding guard); the loopback names and HOST are always added. "*" = any.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Origins besides the server's own that may send state-changing requests (e.g. a TLS proxy's public URL).
    trusted_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    cookie_secure: Literal["auto", "true", "false"] = "auto"  # auto: Secure when the request came over https
    # reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses or networks; "*": all).
    # Nobody by default: the per-IP login limit uses the connecting address (server/ragchat/web/proxies.py).
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias=AliasChoices("trusted_proxies", "forwarded_allow_ips")
    )
    log_format: Literal["text", "json"] = "text"  # json: one object a line (timestamp, level, logger, request id)
    # one more place `ragchat backup`/`restore` look for pg_dump, pg_restore and psql; the newest found among it,
    # the embedded engine's and PATH's is used (db/pg_tools.py)
    pg_bin_dir: Path | None = None
    # the key that signs backups and checks them on restore (HMAC-SHA256; make one: `ragchat backup-key FILE`);
    # BACKUP_KEY itself, or BACKUP_KEY_FILE: a file holding it. Keep it outside the data directory and the backups.
    backup_key: SecretStr | None = None
    backup_key_file: Path | None = None
    # GET /metrics answers `Authorization: Bearer <METRICS_TOKEN>` (a scraper), or an admin's credentials
    metrics_token: SecretStr | None = None
    # A second listener with /metrics, /livez and /readyz only, without a token (bind it where only the
    # scraper reaches): `ragchat worker` has no other; `ragchat serve` opens it beside PORT. Unset: none.
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    metrics_host: str | None = None  # where METRICS_PORT listens; default: HOST
    # /api/health reads the LLM's status from memory; a probe older than this is redone in the background
    llm_status_refresh_s: float = Field(default=15.0, gt=0)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        for entry in v:
            if entry != "*":
                try:
                    ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    raise ValueError(f"TRUSTED_PROXIES: {entry!r} is not an address or a network") from None
        return v

    @property
    def metrics_secret(self) -> str:
        """METRICS_TOKEN as text ("" when unset)."""
        value = self.metrics_token
        return value.get_secret_value() if isinstance(value, SecretStr) else (value or "")

    @field_validator("client_dist", mode="after")
    @classmethod
    def _expand_client_dist(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("allowed_hosts", "trusted_origins", "trusted_proxies", mode="before")
    @classmethod
    def _comma_list(cls, v: object) -> object:
        if isinstance(v, str) and not v.strip().startswith("["):
            return [item.strip() for item in v.split(",") if item.strip()]
        return v

    @property
    def host_allowlist(self) -> list[str]:
        """ALLOWED_HOSTS plus the loopback names and the configured HOST (unless it is a wildcard address)."""
        hosts = ["localhost", "127.0.0.1", "::1", *self.allowed_hosts]
        if self.host not in ("0.0.0.0", "::", ""):
            hosts.append(self.host)
        return list(dict.fromkeys(h.lower() for h in hosts))

    @property
    def max_json_bytes(self) -> int:
        return self.max_json_kb * 1024


class AccountSettings(Group):
    """Settings group: accounts and sessions."""

    # on: every request needs a session or an API token. off: one person on one machine (loopback only).
    auth: Literal["on", "off"] = "on"
    session_ttl_hours: float = 24 * 14  # a session ends after this long without a request
    # Failed logins never lock an account (server/ragchat/accounts/throttle.py). After this many failures of one
    # username from one client address, that address waits LOGIN_DELAY_BASE_S (1 s), then twice as long
    # after each further failure (up to LOGIN_DELAY_MAX_S) before each next try at that name; after this many
    # from anywhere, every try at the name is held up to LOGIN_GLOBAL_DELAY_MAX_S. 0 turns both off.
    # (LOGIN_LOCKOUT_FAILURES is the old name.)
    login_free_failures: int = Field(
        default=5, ge=0, validation_alias=AliasChoices("login_free_failures", "login_lockout_failures")
    )
    login_delay_base_s: float = Field(default=1.0, ge=0.1, le=60)
    login_delay_max_s: float = Field(default=900.0, ge=0)
    login_global_delay_max_s: float = Field(default=2.0, ge=0, le=10)
    login_failure_memory_s: int = Field(default=3600, ge=60)  # failures are forgotten this long after the last
    # Creating the first admin (the first-run page, POST /api/auth/setup) needs this token when the server
    # listens beyond loopback (HOST not 127.0.0.1/::1), so the first stranger to reach a new server does not
    # become its admin. Unset there: `ragchat serve` makes a one-time token and prints the link to use.
    setup_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("RAGCHAT_SETUP_TOKEN", "setup_token")
    )


class OidcSettings(Group):
    """Settings group: sign-in through an OpenID Connect identity provider (on when OIDC_ISSUER is set)."""

    oidc_issuer: str | None = None  # e.g. https://keycloak.example.org/realms/acme (its discovery document's issuer)
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None  # unset: a public client (PKCE only)
    oidc_scopes: str = "openid email profile"
    # create an account on a first sign-in that matches nobody (off: only existing users may sign in this way)
    oidc_auto_create: bool = False
    oidc_admin_group: str | None = None  # members of this group (or role) are admins, the others are not
    # the claim that lists the groups or roles; a dotted path reads a nested one (realm_access.roles)
    oidc_groups_claim: str = "groups"
    oidc_display_name: str = "SSO"  # the login page's button: "Sign in with <name>"
    # where the provider sends the browser back; default: <this server's URL>/api/auth/oidc/callback
    oidc_redirect_url: str | None = None
    oidc_timeout_s: float = Field(default=5.0, gt=0, le=60)  # one request to the provider (discovery, keys, token)
    # a first sign-in may link to the account whose username is the provider's verified email (docs/ACCOUNTS.md)
    oidc_link_by_email: bool = True
    # seconds between re-checks at the provider (refresh grant) of a signed-in SSO user's sessions and API tokens
    oidc_recheck_s: float = Field(default=300.0, ge=1, le=86400)
    local_login_enabled: bool = True  # false: usernames and passwords no longer sign in (SSO and API tokens do)

    @field_validator("oidc_issuer", "oidc_client_id", "oidc_admin_group", "oidc_redirect_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, v: object) -> object:
        return None if isinstance(v, str) and not v.strip() else v

    @model_validator(mode="after")
    def _check_oidc(self) -> Self:
        if self.oidc_issuer is not None:
            if not self.oidc_issuer.startswith(("https://", "http://")):
                raise ValueError(f"OIDC_ISSUER must be an http(s) URL (got {self.oidc_issuer!r})")
            if not self.oidc_client_id:
                raise ValueError("OIDC_ISSUER is set: OIDC_CLIENT_ID must be set too")
            if "openid" not in self.oidc_scopes.split():
                raise ValueError(f"OIDC_SCOPES must include 'openid' (got {self.oidc_scopes!r})")
        return self

    @property
    def oidc_enabled(self) -> bool:
        return self.oidc_issuer is not None

    @property
    def oidc_secret(self) -> str | None:
        value = self.oidc_client_secret
        return value.get_secret_value() if isinstance(value, SecretStr) else value


class LimitSettings(Group):
    """Settings group: per-user rate limits, the rerank cost cap and the budget of LLM work."""

    # per-minute limits (per user; login per client IP and per username); 0 disables one
    rate_login_per_min: int = 10
    rate_chat_per_min: int = 20
    rate_search_per_min: int = 120
    rate_rerank_candidates_per_min: int = 600
    rerank_max_candidates: int = 60  # one request's limit × RERANK_CANDIDATES_FACTOR may not exceed this
    # the budget of LLM work (chat/engine/llm_budget.py): model calls per user per minute, charged for every call a
    # message makes (loop rounds, summary map/reduce parts, LLM rerank, titles); per message: tool calls and
    # whole-document summaries; per user: summaries per hour and running at once. 0 disables one
    rate_llm_calls_per_min: int = Field(default=120, ge=0)
    chat_max_tool_calls: int = Field(default=8, ge=0)
    summary_max_per_message: int = Field(default=1, ge=0)
    rate_summaries_per_hour: int = Field(default=20, ge=0)
    summary_max_running: int = Field(default=2, ge=0)


class AuditSettings(Group):
    """Settings group: the audit log (who signed in, shared, deleted, changed what; what each answer showed)."""

    audit_retention_days: int = Field(default=365, ge=0, le=36500)  # rows older than this are purged; 0 keeps all
    audit_purge_interval_s: float = Field(default=3600.0, gt=0)  # how often a server purges old rows
    # reads recorded as `document.read` rows: off, shared (others' documents read: opened, file, chunks, search
    # hits, MCP), or all (one's own too); one row per request, at most 100 document ids listed
    audit_reads: Literal["off", "shared", "all"] = "shared"
