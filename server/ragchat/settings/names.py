"""Every environment variable ragchat reads, and a warning for one that looks like a setting but is none."""

from __future__ import annotations

import difflib
import logging
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from dotenv import dotenv_values

from ragchat.settings.layout import WHERE

#: prefixes other programs own too (Ollama's server reads OLLAMA_MODELS…; OpenAI's SDK OPENAI_ORG_ID…): in the
#: process environment, a name with one of them is ours only when it is close to one of our names
_SHARED_PREFIXES = ("OLLAMA_", "OPENAI_")
#: ragchat's variables that are not settings: the CLI's (server, token, password) and the tests' and benches'
OTHER_VARIABLES = frozenset(
    {
        "RAGCHAT_SERVER",
        "RAGCHAT_TOKEN",
        "RAGCHAT_PASSWORD",
        "RAGCHAT_CACHE_DIR",
        "RAGCHAT_REAL_LLM",
        "RAGCHAT_FUZZ_EXAMPLES",
        "RAGCHAT_CHUNK_BENCH_MB",
        "RAGCHAT_WHEEL_VENV",
    }
)


def setting_names() -> dict[str, str]:
    """Every environment variable ragchat reads (upper case) → the setting (field) it sets."""
    return {name: field for name, (_, field) in WHERE.items()}


def _prefixes(names: Iterable[str]) -> set[str]:
    """`RAGCHAT_` and every first word two or more of our names share (`CHAT_`, `RERANK_`, `DB_`…)."""
    counts = Counter(name.split("_", 1)[0] + "_" for name in names if "_" in name)
    return {"RAGCHAT_"} | {prefix for prefix, n in counts.items() if n >= 2}


def unknown_settings(environ: Mapping[str, str], dotenv: Iterable[str] = ()) -> list[str]:
    """Warnings for variables that look like ragchat settings but are none (a typo would otherwise be ignored
    without a word): a `.env` key or an environment variable with one of our prefixes, or close to one of our
    names. Each names the closest setting."""
    known = setting_names()
    prefixes = _prefixes(known)
    warnings: list[str] = []
    seen: set[str] = set()
    for origin, keys in (("in .env", dotenv), ("in the environment", environ)):
        for key in keys:
            name = key.strip().upper()
            if not name or name in known or name in OTHER_VARIABLES or name in seen:
                continue
            close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
            prefix = next((p for p in prefixes if name.startswith(p)), None)
            shared = origin != "in .env" and prefix is not None and prefix.startswith(_SHARED_PREFIXES)
            if not close and (prefix is None or shared):
                continue
            seen.add(name)
            guess = close or difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
            hint = f"did you mean {guess[0]}?" if guess else "see .env.example for the settings"
            warnings.append(f"{key} ({origin}) is not a ragchat setting and is ignored: {hint}")
    return warnings


def warn_unknown_settings(env_file: str | Path | None = ".env") -> list[str]:
    """Log `unknown_settings` for this process's environment and `.env` (at start-up); returns them."""
    keys: list[str] = []
    if env_file is not None and Path(env_file).is_file():
        keys = [str(k) for k in dotenv_values(env_file)]
    warnings = unknown_settings(os.environ, keys)
    for warning in warnings:
        logging.getLogger("ragchat.settings").warning("%s", warning)
    return warnings
