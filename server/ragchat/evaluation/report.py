"""Plain-text tables of evaluation results: one run's configurations, per category, and runs side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["compare_table", "format_categories", "format_results"]

COLUMNS = ("recall@1", "recall@5", "recall@10", "ndcg@10", "mrr@10", "chunk_recall@10")


def _columns(configs: Mapping[str, Any]) -> list[str]:
    return [c for c in COLUMNS if any(c in cfg["metrics"] for cfg in configs.values())]


def format_results(results: Mapping[str, Any]) -> str:
    """One row per configuration: the metrics and latency p50/p95."""
    configs: Mapping[str, Any] = results.get("configs", {})
    cols = _columns(configs)
    width = max([len("config"), *(len(n) for n in configs)])
    head = f"{'config':<{width}} " + " ".join(f"{c:>15}" for c in cols) + f" {'p50 ms':>8} {'p95 ms':>8}"
    lines = [head, "-" * len(head)]
    for name, cfg in configs.items():
        vals = " ".join(f"{cfg['metrics'].get(c, 0.0):>15.4f}" for c in cols)
        lat = cfg["latency_ms"]
        lines.append(f"{name:<{width}} {vals} {lat.get('p50', 0.0):>8.1f} {lat.get('p95', 0.0):>8.1f}")
    return "\n".join(lines)


def format_categories(results: Mapping[str, Any], metric: str = "ndcg@10") -> str:
    """byCategory: one row per category, one column per configuration (empty when there are no categories)."""
    configs: Mapping[str, Any] = results.get("configs", {})
    cats = sorted({cat for cfg in configs.values() for cat in cfg.get("by_category", {})})
    if not cats:
        return ""
    width = max(len("category"), *(len(c) for c in cats))
    head = f"{'category':<{width}} {'n':>5} " + " ".join(f"{n:>15}" for n in configs)
    lines = [f"by category ({metric})", head, "-" * len(head)]
    for cat in cats:
        n = next((cfg["by_category"][cat]["queries"] for cfg in configs.values() if cat in cfg["by_category"]), 0)
        vals = " ".join(
            f"{cfg['by_category'].get(cat, {}).get('metrics', {}).get(metric, 0.0):>15.4f}" for cfg in configs.values()
        )
        lines.append(f"{cat:<{width}} {n:>5} {vals}")
    return "\n".join(lines)


def compare_table(columns: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Side by side: one row per (configuration, metric), one column per run (or mode), with the delta of each
    against the first column. `columns` is [(label, {metric: value})]."""
    if not columns:
        return "nothing to compare"
    metrics = [m for m in dict.fromkeys(k for _, vals in columns for k in vals)]
    width = max([len("metric"), *(len(m) for m in metrics)])
    labels = [label for label, _ in columns]
    head = f"{'metric':<{width}} " + " ".join(
        f"{label:>12}" + (f" {'Δ':>9}" if i else "") for i, label in enumerate(labels)
    )
    lines = [head, "-" * len(head)]
    base = columns[0][1]
    for m in metrics:
        cells: list[str] = []
        for i, (_, vals) in enumerate(columns):
            value = vals.get(m)
            cells.append(f"{value:>12.4f}" if value is not None else f"{'—':>12}")
            if i:
                delta = None if value is None or base.get(m) is None else value - base[m]
                cells.append(f"{delta:>+9.4f}" if delta is not None else f"{'—':>9}")
        lines.append(f"{m:<{width}} " + " ".join(cells))
    return "\n".join(lines)


def flat_metrics(results: Mapping[str, Any]) -> dict[str, float]:
    """A run's results as one {"config metric": value} mapping (latency included), for `compare_table`."""
    flat: dict[str, float] = {}
    for name, cfg in results.get("configs", {}).items():
        for metric, value in cfg["metrics"].items():
            if metric in COLUMNS:
                flat[f"{name} {metric}"] = float(value)
        for p, value in cfg["latency_ms"].items():
            flat[f"{name} {p} ms"] = float(value)
    return flat


def config_columns(results: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """One column per configuration of a single run (`--compare modes`)."""
    out: list[tuple[str, dict[str, float]]] = []
    for name, cfg in results.get("configs", {}).items():
        vals = {m: float(v) for m, v in cfg["metrics"].items() if m in COLUMNS}
        vals.update({f"{p} ms": float(v) for p, v in cfg["latency_ms"].items()})
        out.append((name, vals))
    return out
