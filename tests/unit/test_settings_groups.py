"""Settings in groups (server/ragchat/settings.py), the environment variable names unchanged, and a warning
at start-up for a variable that looks like a setting but is none."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragchat.settings import Settings, setting_names, unknown_settings

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ("server", "database", "llm", "embeddings", "retrieval", "ingestion", "accounts", "oidc", "limits", "audit")


def test_every_setting_is_in_exactly_one_group() -> None:
    bases = [b for b in Settings.__bases__ if b.__name__.endswith("Settings") and b.__name__ != "BaseSettings"]
    assert len(bases) == len(GROUPS)
    owners: dict[str, list[str]] = {}
    for base in bases:
        for field in base.model_fields:
            owners.setdefault(field, []).append(base.__name__)
    assert set(owners) == set(Settings.model_fields)  # no field outside a group
    assert {f: o for f, o in owners.items() if len(o) > 1} == {}


def test_a_group_is_the_same_settings_typed_narrower() -> None:
    settings = Settings(_env_file=None, chat_model="qwen3:4b", search_mode="keyword")  # type: ignore[call-arg]
    assert settings.llm.chat_model == "qwen3:4b"
    assert settings.retrieval.search_mode == "keyword"
    assert all(getattr(settings, group) is settings for group in GROUPS)


def test_the_environment_variable_names_are_unchanged() -> None:
    """Every name .env.example documents is still read (users have .env files with them)."""
    documented = set(re.findall(r"^# ([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert documented, ".env.example lists no variables?"
    # OTEL_EXPORTER_OTLP_ENDPOINT is OpenTelemetry's own variable, read by its SDK (observability/tracing.py)
    assert documented - set(setting_names()) - {"OTEL_EXPORTER_OTLP_ENDPOINT"} == set()
    assert {"OLLAMA_TIMEOUT_S", "RAGCHAT_DATA_DIR", "LLM_TIMEOUT_S"} <= set(setting_names())


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
