"""`ragchat prepare-models`: make the embedding model's ONNX export now (at `make install`, in the image build),
so that the first `ragchat serve` does not spend a minute or more on it. It writes where serve and the worker
look (EMBED_CACHE_DIR, else the user's cache directory); `--check` only says whether it is there."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ragchat.settings import EmbedProvider, Settings


def prepare_models(settings: Settings, args: argparse.Namespace) -> int:
    if (
        settings.embeddings.embed_provider is not EmbedProvider.sentence_transformers
        or settings.embeddings.embed_backend != "onnx-int8"
    ):
        print(
            f"ragchat: nothing to prepare (EMBED_PROVIDER={settings.embeddings.embed_provider.value}, "
            f"EMBED_BACKEND={settings.embeddings.embed_backend}: no ONNX export is used)"
        )
        return 0
    from ragchat.providers.embeddings import onnx_export
    from ragchat.providers.embeddings.base import bundled_model_path

    model_dir = Path(bundled_model_path())
    target = onnx_export.cached_path(model_dir, settings.embeddings.embed_cache_dir)
    if onnx_export.intact(target) and _loads(target):
        print(f"ragchat: the embedding model is prepared: {target}")
        return 0
    if args.check:
        print(f"ragchat: the embedding model is not prepared ({target}): run `ragchat prepare-models`", file=sys.stderr)
        return 1
    print(f"ragchat: exporting the embedding model to ONNX (int8) into {target.parent} (once: a minute or two)")
    started = time.monotonic()
    onnx_export.invalidate(target)  # a cached file onnxruntime cannot load is made again
    path = onnx_export.cached_model(model_dir, settings.embeddings.embed_cache_dir)
    if not _loads(path):
        print(f"ragchat: the export {path} does not load in onnxruntime", file=sys.stderr)
        return 1
    print(f"ragchat: prepared {path} in {time.monotonic() - started:.0f} s")
    return 0


def _loads(path: Path) -> bool:
    import onnxruntime as ort

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prepare-models",
        help="make the embedding model's ONNX export now (install, image build), not at the first start",
    )
    p.add_argument("--check", action="store_true", help="only say whether it is prepared (exit 1 if not)")
    p.set_defaults(func=prepare_models)
