"""Tables of `bench/bm25_fields.py`: printed, and as markdown for `bench/results/bm25_fields.md`."""

from __future__ import annotations

from typing import Any

from bench.common import table


def _short(name: str) -> str:
    return name.split("-")[0]


def _cells(report: dict[str, Any], row: dict[str, Any]) -> list[Any]:
    cells: list[Any] = [row["arm"]]
    for name in report["queries"]:
        for arm in ("keyword", "hybrid"):
            m = row[name][arm]
            d = row[name]["delta_vs_baseline"][arm]
            cells.append(f"{m['ndcg@10']:.4f} ({d['mean']:+.4f}±{d['se']:.4f})")
        cells.append(f"{row[name]['keyword']['recall@10']:.4f}")
    cells.append("yes" if row["wins"] else ("no loss" if row["no_loss_on_either"] else ""))
    return cells


def _headers(report: dict[str, Any]) -> list[str]:
    headers = ["analyser: model"]
    for name in report["queries"]:
        s = _short(name)
        headers += [f"{s} kw nDCG@10 (Δ±se)", f"{s} hybrid nDCG@10 (Δ±se)", f"{s} kw R@10"]
    return [*headers, "wins"]


def _reproduction(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    names = list(report["queries"])
    headers = ["keyword list"] + [f"{_short(n)} {a} nDCG@10" for n in names for a in ("keyword", "hybrid")]
    labels = list(report["reproduction"][names[0]])
    rows = [
        [label]
        + [f"{report['reproduction'][n][label][a]['ndcg@10']:.4f}" for n in names for a in ("keyword", "hybrid")]
        for label in labels
    ]
    return headers, rows


def ordered_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(report["rows"], key=lambda r: -(r["keyword_mean_ndcg@10"] + r["hybrid_mean_ndcg@10"]))


def best_per_family(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The best arm (by mean) of each analyser and field model: what each choice is worth at its best setting."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for row in ordered_rows(report):
        analyser, model = row["arm"].split(": ", 1)
        best.setdefault((analyser, model.split(" ", 1)[0]), row)
    return list(best.values())


def print_tables(report: dict[str, Any]) -> None:
    h, rows = _reproduction(report)
    print(table(h, rows, "reproduction: the production keyword arm against this bench's one-field english"))
    print()
    body = [_cells(report, r) for r in best_per_family(report)]
    print(table(_headers(report), body, "the best setting of each analyser and field model"))
    print()
    body = [_cells(report, r) for r in ordered_rows(report)]
    print(table(_headers(report), body, f"arms, best mean first; Δ per query against {report['baseline']}"))
    print(f"\nchosen: {report['chosen']}  ({report['rule']})")
    print(f"load average at start {report['cpu_context_start']['loadavg']}, at end {report['loadavg_end']}")


def _md(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def report_markdown(report: dict[str, Any]) -> str:
    q = report["queries"]
    h, rows = _reproduction(report)
    parts = [
        "# BM25 fields x analysers (issue 34, items 1 and 5)",
        "",
        f"`python bench/bm25_fields.py` on {report['date']}; queries {q}; depth {report['depth']}; k1 {report['k1']}.",
        f"Load average at start {report['cpu_context_start']['loadavg']}, at end {report['loadavg_end']} "
        "(quality only: no timing here).",
        "",
        "## The best setting of each analyser and field model",
        "",
        _md(_headers(report), [_cells(report, r) for r in best_per_family(report)]),
        "",
        "## Reproduction of the production keyword arm",
        "",
        _md(h, rows),
        "",
        f"## Arms (best mean of keyword + hybrid over both sets first; Δ ± standard error per query against "
        f"`{report['baseline']}`)",
        "",
        _md(_headers(report), [_cells(report, r) for r in ordered_rows(report)]),
        "",
        f"Chosen: **{report['chosen']}** — rule: {report['rule']}.",
        "",
    ]
    return "\n".join(parts)
