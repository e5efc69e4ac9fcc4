"""What people read about a search's outcome: the confidence tier with its words, and the rerank warning. The
contract (core/search.py) carries these as fields; retrieval, which decides them, words them."""

from __future__ import annotations

from ragchat.core.search import Confidence, ConfidenceLabel, RerankStatus

INSUFFICIENT_MESSAGE = "No passage matches this question well; try other words or check that the document is uploaded."
LOW_MESSAGE = "Only weak matches: check the passages before relying on them."


def confidence_of(
    best: float | None, *, high: float, moderate: float, floor: float, uncovered: float | None = None
) -> Confidence:
    """The tier of a best similarity (None: no passage, or none with a vector):
    high ≥ CONFIDENCE_HIGH > moderate ≥ CONFIDENCE_MODERATE > low ≥ CONFIDENCE_FLOOR > insufficient.
    `uncovered`: the search found no passage holding enough of the question's words (their share, shown as the
    percentage), whatever the similarity (`Searcher.confidence`)."""
    shown = best
    if uncovered is not None:
        shown = uncovered if best is None else min(best, uncovered)
        label: ConfidenceLabel = "insufficient"
    elif best is None or best < floor:
        label = "insufficient"
    elif best < moderate:
        label = "low"
    elif best < high:
        label = "moderate"
    else:
        label = "high"
    percent = 0 if shown is None else round(min(1.0, max(0.0, shown)) * 100)
    insufficient = label == "insufficient"
    return Confidence(
        label=label,
        percent=percent,
        text=f"{label.capitalize()} confidence ({percent}%)",
        insufficient=insufficient,
        message=INSUFFICIENT_MESSAGE if insufficient else LOW_MESSAGE if label == "low" else None,
        best_similarity=None if best is None else round(best, 4),
        insufficient_confidence=insufficient,
    )


def rerank_status(
    requested: bool,
    scored: int,
    candidates: int,
    scorer: str = "the language model",
    *,
    skipped: int = 0,
    method: str | None = None,
    note: str | None = None,
) -> RerankStatus:
    """`scorer` names who scored in the warning: the language model, or the rerank server (RERANK_PROVIDER=http).
    `skipped` candidates were left unscored on purpose (early stop, listwise window); `note` says why a graded
    method fell back (added to the warning)."""
    if not requested or candidates == 0:
        return RerankStatus(requested=requested)
    common = {"requested": True, "candidates": candidates, "skipped": skipped, "method": method}
    if scored + skipped >= candidates and scored > 0:
        return RerankStatus(status="ok", scored=scored, warning=note, **common)
    if scored == 0:
        warning = (
            f"Rerank failed: {scorer} scored none of the {candidates} passages (unreachable, "
            "erroring or too slow), so the results are in search order."
        )
        return RerankStatus(status="failed", warning=" ".join(filter(None, [warning, note])), **common)
    missing = candidates - scored - skipped
    warning = (
        f"Rerank was partial: {scorer} scored {scored} of {candidates} passages; the "
        f"{missing} it did not score follow the scored ones, in search order."
    )
    return RerankStatus(status="partial", scored=scored, warning=" ".join(filter(None, [warning, note])), **common)


#: When rerank was asked for but nothing can score.
NO_RERANKER = "Rerank is not available: no language model is set up."
