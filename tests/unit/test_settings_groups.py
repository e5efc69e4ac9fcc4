"""Settings in real groups (server/ragchat/settings/), read from the environment variable names users have always
set, given to each service by group; and a warning at start-up for a variable that looks like a setting but is
none."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import typing
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from pydantic import SecretStr

from ragchat.core.search import SearchMode
from ragchat.settings import (
    GROUPS,
    Environment,
    LLMSettings,
    RetrievalSettings,
    Settings,
    env_names,
    group_fields,
    setting_names,
    unknown_settings,
)
from ragchat.settings.layout import WHERE

ROOT = Path(__file__).resolve().parents[2]
GROUP_NAMES = "server database llm embeddings retrieval ingestion accounts oidc limits audit".split()

#: Every environment variable the flat `Settings` of session 14 read (its 182 fields and their aliases):
#: a user's `.env` may hold any of them, so each must still set its setting.
OLD_NAMES = """
ALLOWED_HOSTS ALLOW_PRIVATE_URLS AUDIT_PURGE_INTERVAL_S AUDIT_READS AUDIT_RETENTION_DAYS AUTH BACKUP_KEY
BACKUP_KEY_FILE BM25_B BM25_K1 CHAT_ANSWER_RESERVE_TOKENS CHAT_CONTEXT_TOKENS CHAT_DOCUMENTS_ONLY CHAT_HISTORY_CHARS
CHAT_HISTORY_MESSAGES CHAT_MAX_MESSAGE_CHARS CHAT_MAX_TOOL_CALLS CHAT_MAX_TOOL_ROUNDS CHAT_MODEL
CHAT_PASSAGE_SENTENCES CHAT_RETRIEVE_FIRST CHAT_REWRITE_FOLLOWUPS CHAT_REWRITE_TIMEOUT_S CHAT_SEARCH_FIRST
CHAT_SEARCH_LIMIT CHAT_TEMPERATURE CHAT_TITLE_GENERATION CHAT_TITLE_TIMEOUT_S CHAT_USE_TOOLS CHUNK_MAX_CHARS
CHUNK_OVERLAP CHUNK_SEMANTIC_LLM CHUNK_STRATEGY CHUNK_TOKENS CITATION_JUDGE CITATION_JUDGE_TIMEOUT_S CLIENT_DIST
CONFIDENCE_FLOOR CONFIDENCE_HIGH CONFIDENCE_MODERATE COOKIE_SECURE DATABASE_PREPARED_STATEMENTS
DATABASE_READ_CHECK_S DATABASE_READ_MAX_LAG DATABASE_READ_URL DATABASE_URL DB_POOL_MAX DB_POOL_MIN
DB_POOL_TIMEOUT_S DB_PROBE_TIMEOUT_S DB_WATCHDOG_INTERVAL_S EMBEDDED_SHARED_BUFFERS EMBED_BACKEND EMBED_BATCH_SIZE
EMBED_CACHE_DIR EMBED_DIM EMBED_LANGUAGES EMBED_MODEL EMBED_PROVIDER EMBED_THREADS EMBED_TIMEOUT_S
EXACT_SCAN_MAX_ROWS EXPANSION_MAX_CHARS EXPANSION_MAX_TERMS EXPANSION_TIMEOUT_S FORWARDED_ALLOW_IPS FUSION
FUSION_VECTOR_WEIGHT FUSION_VECTOR_WEIGHT_OTHER_LANGUAGES HNSW_EF_GROWTH HNSW_EF_SEARCH HNSW_FILTERED_EF_FACTOR HOST
INGEST_CANCEL_POLL_S INGEST_HEAVY_PER_USER INGEST_HEAVY_SLOTS INGEST_LEASE_S INGEST_MAX_ATTEMPTS
INGEST_RETRY_BACKOFF_S INGEST_WORKERS KEYWORD_CANDIDATES KEYWORD_SCORER LLM_CONNECT_TIMEOUT_S LLM_FIRST_TOKEN_FACTOR
LLM_MAX_CALL_S LLM_PROVIDER LLM_STALL_TIMEOUT_S LLM_STATUS_REFRESH_S LLM_TIMEOUT_S LOCAL_LOGIN_ENABLED
LOGIN_DELAY_MAX_S LOGIN_FAILURE_MEMORY_S LOGIN_FREE_FAILURES LOGIN_GLOBAL_DELAY_MAX_S LOGIN_LOCKOUT_FAILURES
LOG_FORMAT LOG_LEVEL MAX_COMPRESSION_RATIO MAX_ELEMENTS MAX_INFLATED_MB MAX_JSONL_RECORDS MAX_JSONL_RECORD_KB
MAX_JSON_KB MAX_PDF_PAGES MAX_UPLOAD_MB MAX_ZIP_MEMBERS MAX_ZIP_MEMBER_MB METADATA_EXTRACTION
METADATA_EXTRACTION_CHARS METADATA_EXTRACTION_TIMEOUT_S METRICS_HOST METRICS_PORT METRICS_TOKEN OCR_ENABLED
OCR_MAX_MEGAPIXELS OCR_MAX_PAGES OCR_MAX_PIXELS OCR_MIN_TEXT_CHARS OCR_PAGE_TIMEOUT_S OCR_TIME_BUDGET_S
OCR_USER_MEGAPIXELS_PER_DAY OIDC_ADMIN_GROUP OIDC_AUTO_CREATE OIDC_CLIENT_ID OIDC_CLIENT_SECRET OIDC_DISPLAY_NAME
OIDC_GROUPS_CLAIM OIDC_ISSUER OIDC_LINK_BY_EMAIL OIDC_RECHECK_S OIDC_REDIRECT_URL OIDC_SCOPES OIDC_TIMEOUT_S
OLLAMA_HOST OLLAMA_TIMEOUT_S OPENAI_API_KEY OPENAI_BASE_URL PARSE_TIMEOUT_S PG_BIN_DIR PORT QUERY_EMBED_PRECISION
QUERY_EXPANSION RAGCHAT_DATA_DIR RAGCHAT_SETUP_TOKEN RAG_FOOTNOTES RATE_CHAT_PER_MIN RATE_LLM_CALLS_PER_MIN
RATE_LOGIN_PER_MIN RATE_RERANK_CANDIDATES_PER_MIN RATE_SEARCH_PER_MIN RATE_SUMMARIES_PER_HOUR REEMBED_GRACE_S
RERANK_API RERANK_API_KEY RERANK_BATCH_SIZE RERANK_CANDIDATES_FACTOR RERANK_CLIENT_SHARDS RERANK_CONCURRENCY
RERANK_DEADLINE_S RERANK_EARLY_STOP RERANK_ENABLED RERANK_LISTWISE_SIZE RERANK_MAX_CANDIDATES RERANK_METHOD
RERANK_MODEL RERANK_PASSAGE_CHARS RERANK_PROVIDER RERANK_TIMEOUT_S RERANK_URL RRF_K SEARCH_ALL_LIMIT
SEARCH_ALL_MAX_LIMIT SEARCH_LIMIT_MAX SEARCH_MODE SESSION_TTL_HOURS SETUP_TOKEN SPACES_REFRESH_S
SUMMARY_CONTEXT_TOKENS SUMMARY_MAX_PARTS SUMMARY_MAX_PER_MESSAGE SUMMARY_MAX_RUNNING SUMMARY_MAX_SECTIONS
TEXT_SEARCH_CONFIG TRUSTED_ORIGINS TRUSTED_PROXIES URL_FETCH_TIMEOUT_S
""".split()

#: values a type-derived sample would not pass (a pattern, a check, a companion setting)
SAMPLES = {
    "DATABASE_READ_URL": "postgresql://replica.example/ragchat",
    "EMBEDDED_SHARED_BUFFERS": "512MB",
    "TEXT_SEARCH_CONFIG": "german",
    "TRUSTED_PROXIES": "10.0.0.0/8,127.0.0.1",
    "FORWARDED_ALLOW_IPS": "10.0.0.0/8",
    "OIDC_ISSUER": "https://sso.example.org/realms/acme",
    "OIDC_SCOPES": "openid email",
}
COMPANIONS = {"OIDC_ISSUER": {"OIDC_CLIENT_ID": "ragchat"}}


def _sample(annotation: Any, default: Any) -> str:
    """A value of the field's type other than its default, as the environment would spell it."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (typing.Union, __import__("types").UnionType) and len(args) == 1:
        annotation = args[0]
    if get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Literal:
        return next(str(c) for c in get_args(annotation) if c != default)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return next(m.value for m in annotation if m != default)
    if annotation is bool:
        return str(not default).lower()
    if annotation is int:
        return str((default or 6) + 1)
    if annotation is float:
        return str(default / 2 if default else 0.5)
    if get_origin(annotation) is list:
        return "a.example,b.example"
    return "/tmp/ragchat-sample" if annotation is Path else "sample-value"


def _plain(value: Any) -> Any:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No setting from the process environment, and a working directory without a `.env`."""
    for name in list(os.environ):
        if name.upper() in WHERE:
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


# ---- the groups -----------------------------------------------------------------------------------------------
def test_every_setting_is_in_exactly_one_group() -> None:
    assert list(GROUPS) == GROUP_NAMES == list(Settings.model_fields)
    owners: dict[str, list[str]] = {}
    for group, field, _ in group_fields():
        owners.setdefault(field, []).append(group)
    assert {f: o for f, o in owners.items() if len(o) > 1} == {}
    assert set(owners) == set(Environment.model_fields)  # the flat names are exactly the groups' fields


def test_a_group_is_its_own_model_not_the_whole_settings(clean_env: pytest.MonkeyPatch) -> None:
    settings = Settings(_env_file=None, chat_model="qwen3:4b", search_mode="keyword")  # type: ignore[call-arg]
    assert type(settings.llm) is LLMSettings and settings.llm.chat_model == "qwen3:4b"
    assert type(settings.retrieval) is RetrievalSettings and settings.retrieval.search_mode is SearchMode.keyword
    assert not hasattr(settings, "chat_model")  # no flat attribute: a service sees its group only
    assert not hasattr(settings.retrieval, "chat_model")


def test_a_copy_takes_flat_names_and_refuses_unknown_ones(clean_env: pytest.MonkeyPatch) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    tuned = settings.model_copy(update={"fusion": "rrf", "chat_model": "m", "embed_batch_size": 1})
    assert (tuned.retrieval.fusion, tuned.llm.chat_model, tuned.embeddings.embed_batch_size) == ("rrf", "m", 1)
    assert settings.retrieval.fusion == "relative"  # the original is untouched
    assert tuned.database is settings.database  # groups not named are shared, as model_copy does
    with pytest.raises(KeyError, match="chat_modle"):
        settings.model_copy(update={"chat_modle": "m"})  # a typo would otherwise change nothing


# ---- only the composition root sees the whole object -----------------------------------------------------------
PACKAGE = ROOT / "server" / "ragchat"
#: the composition root: the runtime, the app factory, the CLI (`ragchat worker` too), and the settings themselves
COMPOSITION_ROOT = ("runtime.py", "app.py", "cli/", "settings/")


def whole_settings_uses(source: str) -> list[str]:
    """Where a module takes the whole `Settings`: a parameter, a field, an attribute or a return annotated with
    it (also inside `Settings | None`, `list[Settings]`, a string annotation), or the name imported at all."""
    found: list[str] = []

    def names_settings(node: ast.expr | None) -> bool:
        if node is None:
            return False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id == "Settings":
                return True
            if isinstance(sub, ast.Attribute) and sub.attr == "Settings":
                return True
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and re.search(r"\bSettings\b", sub.value):
                return True
        return False

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ragchat.settings"):
            found += [f"line {node.lineno}: imports Settings" for a in node.names if a.name == "Settings"]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if arg is not None and names_settings(arg.annotation):
                    found.append(f"line {arg.lineno}: parameter {arg.arg} of {node.name}")
            if names_settings(node.returns):
                found.append(f"line {node.lineno}: {node.name} returns it")
        elif isinstance(node, ast.AnnAssign) and names_settings(node.annotation):
            found.append(f"line {node.lineno}: {ast.unparse(node.target)}")
    return found


def test_no_module_outside_the_composition_root_takes_the_whole_settings() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith(COMPOSITION_ROOT):
            continue
        uses = whole_settings_uses(path.read_text(encoding="utf-8"))
        if uses:
            offenders[where] = uses
    assert offenders == {}, "give these their settings group (or a few values) instead of the whole Settings"


@pytest.mark.parametrize(
    "planted",
    [
        "from ragchat.settings import Settings\n",
        "from ragchat.settings import LLMSettings\ndef build(s: 'Settings') -> None: ...\n",
        "import ragchat.settings\nclass Service:\n    settings: ragchat.settings.Settings | None = None\n",
        "def run(*, cfg: list[Settings]) -> None: ...\n",
        "class Door:\n    def __init__(self, x: int) -> None:\n        self.settings: Settings = x\n",
    ],
)
def test_the_walk_finds_a_planted_whole_settings(planted: str) -> None:
    assert whole_settings_uses(planted), planted


def test_a_group_is_allowed() -> None:
    ok = "from ragchat.settings import RetrievalSettings\ndef f(settings: RetrievalSettings) -> None: ...\n"
    assert whole_settings_uses(ok) == []


def test_the_kernel_imports_no_web_framework() -> None:
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            modules += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for module in modules:
                assert module.split(".")[0] not in {"litestar", "starlette", "sse_starlette"}, (path, module)


# ---- the environment's names ----------------------------------------------------------------------------------
def test_the_old_names_are_all_still_settings() -> None:
    assert set(OLD_NAMES) <= set(WHERE), set(OLD_NAMES) - set(WHERE)


@pytest.mark.parametrize("name", OLD_NAMES)
def test_each_old_name_sets_its_setting_in_its_group(clean_env: pytest.MonkeyPatch, name: str) -> None:
    group, field = WHERE[name]
    info = GROUPS[group].model_fields[field]
    raw = SAMPLES.get(name) or _sample(info.annotation, info.default)
    companions = COMPANIONS.get(name, {})
    for key, value in {name: raw, **companions}.items():
        clean_env.setenv(key, value)
    got = getattr(getattr(Settings(_env_file=None), group), field)  # type: ignore[call-arg]
    direct = {field: raw, **{WHERE[k][1]: v for k, v in companions.items()}}
    expected = getattr(GROUPS[group].model_validate(direct), field)
    assert _plain(got) == _plain(expected)
    assert _plain(got) != _plain(info.get_default(call_default_factory=True)), f"{name} changed nothing"


def test_lower_case_names_are_read_too(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("search_mode", "vector")
    clean_env.setenv("Chat_Model", "mixed")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.retrieval.search_mode, settings.llm.chat_model) == (SearchMode.vector, "mixed")


def test_a_users_env_file_loads_the_same_values(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A `.env` written from .env.example's names before the groups existed: the same values, in their groups;
    the process environment over the file, arguments over both."""
    (tmp_path / ".env").write_text(
        "\n".join(
            [
                "# my ragchat",
                "LLM_PROVIDER=openai",
                "OPENAI_BASE_URL=http://127.0.0.1:8080/v1",
                "OPENAI_API_KEY=sk-local",
                "CHAT_MODEL=qwen2.5-coder:1.5b",
                "OLLAMA_TIMEOUT_S=300",
                "SEARCH_MODE=keyword",
                "RERANK_ENABLED=true",
                "FUSION=rrf",
                "CHUNK_TOKENS=128",
                "CHUNK_OVERLAP=16",
                "MAX_UPLOAD_MB=10",
                "RAGCHAT_DATA_DIR=/srv/ragchat",
                "HOST=0.0.0.0",
                "PORT=9000",
                "ALLOWED_HOSTS=rag.example.org, docs.example.org",
                "AUTH=off",
                "LOGIN_LOCKOUT_FAILURES=3",
                "RATE_CHAT_PER_MIN=5",
                "AUDIT_READS=all",
                "EMBED_BATCH_SIZE=16",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    clean_env.setenv("PORT", "9100")  # the environment wins over the file
    settings = Settings(chunk_overlap=8)  # type: ignore[call-arg]  # arguments win over both
    assert settings.llm.llm_provider.value == "openai"
    assert settings.llm.openai_key == "sk-local"
    assert settings.llm.chat_model == "qwen2.5-coder:1.5b"
    assert settings.llm.llm_timeout_s == 300.0
    assert settings.retrieval.search_mode is SearchMode.keyword
    assert (settings.retrieval.rerank_enabled, settings.retrieval.fusion) == (True, "rrf")
    assert (settings.ingestion.chunk_tokens, settings.ingestion.chunk_overlap) == (128, 8)
    assert settings.ingestion.max_upload_bytes == 10 * 1024 * 1024
    assert settings.database.data_dir == Path("/srv/ragchat")
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 9100)
    assert settings.server.allowed_hosts == ["rag.example.org", "docs.example.org"]
    assert settings.accounts.auth == "off"
    assert settings.accounts.login_free_failures == 3
    assert settings.limits.rate_chat_per_min == 5
    assert settings.audit.audit_reads == "all"
    assert settings.embeddings.embed_batch_size == 16
    assert Settings(_env_file=None).server.port == 9100  # type: ignore[call-arg]  # no file: only the environment


def test_a_bad_value_names_the_setting(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("SEARCH_MODE", "fuzzy")
    with pytest.raises(ValueError, match="SEARCH_MODE must be one of vector, keyword, hybrid"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_the_environment_variable_names_are_documented() -> None:
    """Every name .env.example documents is still read (users have .env files with them)."""
    documented = set(re.findall(r"^# ([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert documented, ".env.example lists no variables?"
    # OTEL_EXPORTER_OTLP_ENDPOINT is OpenTelemetry's own variable, read by its SDK (observability/tracing.py)
    assert documented - set(setting_names()) - {"OTEL_EXPORTER_OTLP_ENDPOINT"} == set()
    assert {"OLLAMA_TIMEOUT_S", "RAGCHAT_DATA_DIR", "LLM_TIMEOUT_S"} <= set(setting_names())
    assert env_names(RetrievalSettings.model_fields["search_mode"], "search_mode") == ["SEARCH_MODE"]


# ---- unknown names --------------------------------------------------------------------------------------------
def test_a_typo_names_the_closest_setting() -> None:
    warnings = unknown_settings(
        {"CHAT_MODLE": "qwen", "RERANK_ENABLE": "1", "RAGCHAT_DATADIR": "/srv", "DB_POOL": "3"},
        ["SEARCHMODE", "embed_modell"],
    )
    assert len(warnings) == 6, warnings
    expected = {
        "SEARCHMODE": "SEARCH_MODE",
        "embed_modell": "EMBED_MODEL",
        "CHAT_MODLE": "CHAT_MODEL",
        "RERANK_ENABLE": "RERANK_ENABLED",
        "RAGCHAT_DATADIR": "RAGCHAT_DATA_DIR",
        "DB_POOL": "DB_POOL_",
    }
    for warning, (typo, setting) in zip(warnings, expected.items(), strict=True):
        assert warning.startswith(f"{typo} (in "), warning
        assert f"did you mean {setting}" in warning, warning


def test_other_programs_variables_are_left_alone() -> None:
    env = {
        "HOSTNAME": "box",
        "PATH": "/bin",
        "OLLAMA_MODELS": "/models",  # Ollama's own server
        "OLLAMA_KEEP_ALIVE": "5m",
        "OPENAI_ORG_ID": "org",  # the OpenAI SDK's
        "RAGCHAT_SERVER": "http://x",  # the CLI's, not a setting
        "CHAT_MODEL": "llama3.2",  # known
        "chat_model": "llama3.2",  # names are case-insensitive
        "LANG": "C.UTF-8",
    }
    assert unknown_settings(env, ["FOO", "COMPOSE_PROJECT_NAME"]) == []
    # in .env (ragchat's file) a name with one of our prefixes is a warning even when nothing is close
    assert unknown_settings({}, ["OPENAI_ORGANIZATION"]) == [
        "OPENAI_ORGANIZATION (in .env) is not a ragchat setting and is ignored: did you mean OPENAI_API_KEY?"
    ]


@pytest.mark.parametrize("hostile", ["X" * 100_000, "CHAT_" + "é" * 5000, "RERANK_\x1b[31m", "=", " "])
def test_hostile_names_are_handled_in_bounded_time(hostile: str) -> None:
    warnings = unknown_settings({hostile: "1"}, [hostile])
    assert len(warnings) <= 1


def test_the_warning_appears_at_start_up(tmp_path: Path) -> None:
    """A real `ragchat` process, a .env with a typo and a mistyped variable: both named on stderr."""
    (tmp_path / ".env").write_text("CHAT_MODLE=qwen3:4b\nSOMETHING_ELSE=1\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k.upper() not in setting_names()}
    env |= {"RERANK_ENABLE": "true", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-m", "ragchat.cli", "logout"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "CHAT_MODLE (in .env) is not a ragchat setting and is ignored: did you mean CHAT_MODEL?" in done.stderr
    assert "RERANK_ENABLE (in the environment) is not a ragchat setting" in done.stderr
    assert "did you mean RERANK_ENABLED?" in done.stderr
    assert "SOMETHING_ELSE" not in done.stderr
