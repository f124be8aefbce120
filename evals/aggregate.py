"""The means of a run's rows: what ``metrics.json`` holds. Scores become percentages (0-100,
as papers print them) per question type and overall; costs (calls, tokens, seconds) are means
per question, with what the LLM cache saved counted apart; planner runs add their stop reasons
and plan sizes, draft-first runs their escalation rate and time to the first answer
(``evals.drafts``). Rendering them is ``evals.report``'s job (and ``evals.compare``'s, for several
runs)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evals.drafts import draft_means
from evals.metrics import mean_defined


def prompt_tokens_read(row: Mapping[str, Any]) -> int:
    """The prompt tokens a row's calls read, from the model or the LLM cache: a cache hit
    counts its prompt in ``cache_hit_prompt_tokens``, so a live call and its replayed hit
    read the same number."""
    return int(row.get("prompt_tokens") or 0) + int(row.get("cache_hit_prompt_tokens") or 0)


def _percent(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The means of per-question rows. Retrieval success, gold recall and hop recall are
    averaged over the questions where they are defined (a yes/no answer has no span to find,
    HotpotQA has no gold hops), and how many that was is reported beside them, so a "100" over
    3 questions cannot pass for one over 300."""
    success = [r.get("retrieval_success") for r in rows]
    recall = [r.get("gold_recall") for r in rows]
    hops = [r.get("hop_recall") for r in rows]
    mean_success = mean_defined(success)
    mean_recall = mean_defined(recall)
    by_type: dict[str, dict[str, Any]] = {}
    for kind in sorted({str(r.get("type") or "") for r in rows} - {""}):
        group = [r for r in rows if r.get("type") == kind]
        group_hops = [r.get("hop_recall") for r in group]
        by_type[kind] = {
            "n": len(group),
            "em": _percent(_mean([r["em"] for r in group])),
            "f1": _percent(_mean([r["f1"] for r in group])),
            # a 4-hop chain is where a planner's recall should fall first
            "hop_recall": _percent(mean_defined(group_hops)),
            "hop_recall_n": sum(v is not None for v in group_hops),
        }

    def per_question(key: str, digits: int = 2) -> float | None:
        value = _mean([float(r.get(key) or 0) for r in rows])
        return None if value is None else round(value, digits)

    def median(key: str) -> float | None:
        """A planner's cost is skewed (a few questions loop to the budget), so the typical
        question is the median, reported beside the mean."""
        values = [float(r.get(key) or 0) for r in rows]
        return round(statistics.median(values), 2) if values else None

    # rows written before the LLM cache's share was recorded lack these fields: they are left
    # out rather than counted as no hits, and how many rows had them is reported beside
    cached = [r for r in rows if r.get("llm_cache_hits") is not None]

    def cached_mean(value: Callable[[dict[str, Any]], float], digits: int) -> float | None:
        mean = _mean([value(r) for r in cached])
        return None if mean is None else round(mean, digits)

    return {
        "n": len(rows),
        "em": _percent(_mean([r["em"] for r in rows])),
        "f1": _percent(_mean([r["f1"] for r in rows])),
        "acc": _percent(_mean([r["acc"] for r in rows])),
        "retrieval_success": _percent(mean_success),
        "retrieval_success_n": sum(v is not None for v in success),
        "gold_recall": _percent(mean_recall),
        "gold_recall_n": sum(v is not None for v in recall),
        "hop_recall": _percent(mean_defined(hops)),
        "hop_recall_n": sum(v is not None for v in hops),
        "llm_calls_per_question": per_question("llm_calls"),
        "prompt_tokens_per_question": per_question("prompt_tokens", 1),
        "completion_tokens_per_question": per_question("completion_tokens", 1),
        "seconds_per_question": per_question("seconds"),
        "llm_calls_median": median("llm_calls"),
        "prompt_tokens_median": median("prompt_tokens"),
        "completion_tokens_median": median("completion_tokens"),
        "seconds_median": median("seconds"),
        "llm_cache_hits_per_question": cached_mean(lambda r: r["llm_cache_hits"], 2),
        "prompt_tokens_without_cache_per_question": cached_mean(prompt_tokens_read, 1),
        "llm_cache_recorded_n": len(cached),
        **_planner_means(rows),
        **draft_means(rows),  # draft-first runs: escalation rate, time to the first answer
        # which commit made the rows (rows from before the field existed are left out)
        "code_versions": dict(Counter(str(r["code"]) for r in rows if r.get("code")).most_common()),
        "errors": sum(1 for r in rows if r.get("error")),
        "by_type": by_type,
    }


def _planner_means(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Rounds, atomic queries and stop reasons over the rows that record the planner (the
    planner pipelines, from the rows written since the field exists); nothing otherwise."""
    planned = [r["planner"] for r in rows if isinstance(r.get("planner"), dict)]
    if not planned:
        return {}
    queries = [p.get("sub_queries") or [] for p in planned]
    stopped = Counter(str(p.get("stopped")) for p in planned)
    return {
        "planner_recorded_n": len(planned),
        "planner_rounds_per_question": round(
            statistics.fmean(p.get("rounds", 0) for p in planned), 2
        ),
        "planner_queries_per_question": round(statistics.fmean(len(q) for q in queries), 2),
        "planner_followups_per_question": round(
            statistics.fmean(sum(s.get("origin") == "supplement" for s in q) for q in queries), 2
        ),
        "planner_stopped": dict(stopped.most_common()),
    }
