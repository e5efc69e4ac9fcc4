"""Export the bundled all-MiniLM-L6-v2 to ONNX once, quantise it to int8, and cache the file.

The cache key is the weights' SHA-256, the onnxruntime version and `EXPORT_VERSION` (the recipe below): a
new model package, a new runtime or a new recipe export again; anything else reuses the file. The export
is written to a temporary name and renamed into place (atomic), under a file lock, so concurrent processes
export once. A `manifest.json` beside the model holds the file's SHA-256: a cached file that does not match
it (truncated, corrupted) is exported again.

Recipe: `torch.onnx.export` of the Hugging Face encoder (eager attention, so onnxruntime's BERT optimiser
fuses attention, LayerNorm and GELU), then dynamic int8 quantisation of the weight matmuls only
(`MatMulConstBOnly`, per-channel): activation × activation products (attention scores) stay float32, and
so do the feed-forward output projections (`*/output/dense/MatMul`, whose GELU inputs have outliers):
quantising those too was 3.0× torch but lost 0.010 nDCG@10 on SciFact; without them 2.45× and within
0.0025 on both dev sets (docs/benchmarks/results/ingest_backends.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

EXPORT_VERSION = 2  # bump when the recipe changes: cached files of older recipes are not reused
Variant = Literal["int8", "fp32"]
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def default_cache_dir() -> Path:
    """Where exported models live unless EMBED_CACHE_DIR says otherwise: the user's cache (shared by every
    data directory and test session on the machine)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("ragchat", appauthor=False)) / "onnx"


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_key(model_dir: Path, variant: Variant) -> str:
    import onnxruntime

    weights = file_digest(model_dir / "model.safetensors")
    return f"minilm-{weights[:16]}-ort{onnxruntime.__version__}-r{EXPORT_VERSION}-{variant}"


def cached_path(model_dir: str | Path, cache_dir: Path | None = None, variant: Variant = "int8") -> Path:
    """Where the export of these weights (for this onnxruntime and recipe) is, or will be, cached."""
    return (cache_dir or default_cache_dir()) / cache_key(Path(model_dir), variant) / "model.onnx"


def cached_model(model_dir: str | Path, cache_dir: Path | None = None, variant: Variant = "int8") -> Path:
    """The exported model's path: from the cache when it is there and intact, else exported now (30-90 s on
    two cores; `ragchat prepare-models` does it at install or image build). An intact cache is only read, so a
    read-only one (an image's, prepared by another user) works."""
    model_dir = Path(model_dir)
    target = cached_path(model_dir, cache_dir, variant)
    if intact(target):  # the manifest is written after the file is in place: intact means complete
        return target
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        if intact(target):
            return target
        started = time.monotonic()
        log.info("exporting %s to ONNX (%s) in %s: once per weights and onnxruntime", model_dir.name, variant, folder)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".export-") as tmp:
            built = _export(model_dir, Path(tmp), variant)
            digest = file_digest(built)
            os.replace(built, target)
        _write_atomic(folder / "manifest.json", json.dumps({"sha256": digest, "variant": variant}))
        log.info("ONNX export done in %.1f s: %s", time.monotonic() - started, target)
    return target


def intact(target: Path) -> bool:
    """Is the cached file the one exported (its SHA-256 as the manifest recorded)?"""
    try:
        manifest = json.loads((target.parent / "manifest.json").read_text())
        return target.is_file() and file_digest(target) == manifest["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def invalidate(target: Path) -> None:
    """Forget a cached export that failed to load, so the next `cached_model` builds it again."""
    with contextlib.suppress(FileNotFoundError):
        (target.parent / "manifest.json").unlink()


def _export(model_dir: Path, tmp: Path, variant: Variant) -> Path:
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    raw, fused = tmp / "raw.onnx", tmp / "fused.onnx"
    ids = torch.ones((2, 16), dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    with torch.inference_mode():
        torch.onnx.export(
            _token_states(encoder),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(raw),
            dynamo=False,
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
        )
    config = encoder.config
    optimised = optimize_model(
        str(raw), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size
    )
    optimised.save_model_to_file(str(fused))
    if variant == "fp32":
        return fused
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = tmp / "int8.onnx"
    graph = onnx.load(str(fused), load_external_data=False).graph
    ffn_out = [n.name for n in graph.node if n.op_type == "MatMul" and _is_ffn_output(n.name)]
    quantize_dynamic(
        str(fused),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        nodes_to_exclude=ffn_out,
        extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return out


def _is_ffn_output(name: str) -> bool:
    return "/output/dense/" in name and "/attention/" not in name


def _token_states(encoder: Any) -> Any:
    """A module calling `encoder` with keyword arguments (the positional order changed across transformers
    versions) and returning the token states only."""
    import torch

    class TokenStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    return TokenStates().eval()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
