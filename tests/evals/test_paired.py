"""Paired statistics of runs over the questions they share: the bootstrap interval, wins and
losses, headroom between the best one-call RAG run and the oracle, per question type. Rows are
made here; nothing runs a model."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import evals.paired as paired
from evals.paired import (
    PairedDiff,
    RunRows,
    analyse,
    answers_changed,
    bootstrap_interval,
    cost_notes,
    cost_value,
    format_gain,
    headroom_captured,
    paired_cost,
    paired_diff,
    paired_markdown,
    pipeline_role,
)


def f1s(values: list[float], prefix: str = "q") -> dict[str, float]:
    return {f"{prefix}{i:03d}": v for i, v in enumerate(values)}


def test_the_interval_of_two_questions_is_what_counting_the_resamples_gives() -> None:
    # resampling [0, 1] twice gives a mean of 0, 0.5 or 1 with chances 1/4, 1/2, 1/4: the
    # 2.5th percentile is 0 and the 97.5th is 1
    assert bootstrap_interval([0.0, 1.0], resamples=4000, seed=1) == (0.0, 1.0)
    # one difference, resampled, is always itself
    assert bootstrap_interval([0.25], resamples=50) == (0.25, 0.25)


def test_a_consistent_gain_has_an_interval_that_excludes_zero() -> None:
    reference = f1s([0.0] * 40)
    run = f1s([1.0] * 15 + [0.0] * 22 + [0.0] * 3)
    reference.update(f1s([1.0] * 3, prefix="r"))
    run.update(f1s([0.0] * 3, prefix="r"))
    diff = paired_diff(run, reference, resamples=5000, seed=3)
    assert (diff.n, diff.wins, diff.losses, diff.ties) == (43, 15, 3, 25)
    assert diff.mean == pytest.approx(100 * 12 / 43)
    assert 0 < diff.low < diff.mean < diff.high
    assert diff.excludes_zero


def test_balanced_wins_and_losses_give_an_interval_around_zero() -> None:
    run = f1s([1.0] * 10 + [0.0] * 10 + [0.5] * 20)
    reference = f1s([0.0] * 10 + [1.0] * 10 + [0.5] * 20)
    diff = paired_diff(run, reference, resamples=5000, seed=3)
    assert (diff.wins, diff.losses, diff.ties) == (10, 10, 20)
    assert diff.mean == pytest.approx(0.0)
    assert diff.low < 0 < diff.high
    assert not diff.excludes_zero


def test_the_same_seed_gives_the_same_interval_whatever_the_row_order() -> None:
    rng = random.Random(5)
    run = f1s([rng.random() for _ in range(60)])
    reference = f1s([rng.random() for _ in range(60)])
    first = paired_diff(run, reference, resamples=3000, seed=11)
    shuffled = list(run.items())
    rng.shuffle(shuffled)
    assert paired_diff(dict(shuffled), reference, resamples=3000, seed=11) == first
    other = paired_diff(run, reference, resamples=3000, seed=12)
    assert other.mean == first.mean and (other.low, other.high) != (first.low, first.high)


def test_the_interval_does_not_depend_on_the_block_size_of_the_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    diffs = np.random.default_rng(0).normal(size=300)
    whole = bootstrap_interval(diffs, resamples=1000, seed=4)
    monkeypatch.setattr(paired, "_BLOCK_CELLS", 300 * 7)  # blocks of 7 resamples
    assert bootstrap_interval(diffs, resamples=1000, seed=4) == whole


def test_ties_count_equal_partial_scores_and_only_shared_questions_count() -> None:
    run = {"a": 0.5, "b": 0.4, "c": 1.0, "only-run": 1.0}
    reference = {"a": 0.5, "b": 0.4, "c": 0.0, "only-reference": 0.0}
    diff = paired_diff(run, reference, resamples=100)
    assert (diff.n, diff.wins, diff.losses, diff.ties) == (3, 1, 0, 2)
    assert diff.mean == pytest.approx(100 / 3)


@pytest.mark.parametrize(
    ("diffs", "kwargs"),
    [([], {}), ([0.1], {"resamples": 0}), ([0.1], {"confidence": 1.0})],
)
def test_a_bootstrap_without_data_or_resamples_is_refused(
    diffs: list[float], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValueError):
        bootstrap_interval(diffs, **kwargs)


def test_two_runs_without_a_shared_question_are_refused() -> None:
    with pytest.raises(ValueError, match="share no question"):
        paired_diff({"a": 1.0}, {"b": 1.0})


def test_headroom_is_the_share_of_the_gap_to_the_oracle_closed() -> None:
    assert headroom_captured(50.0, 40.0, 60.0) == pytest.approx(50.0)
    assert headroom_captured(35.0, 40.0, 60.0) == pytest.approx(-25.0)
    assert headroom_captured(50.0, 40.0, None) is None
    assert headroom_captured(50.0, 40.0, 40.0) is None  # no gap to close


@pytest.mark.parametrize(
    ("pipeline", "role"),
    [
        ("oracle", "oracle"),
        ("no-retrieval", "no-retrieval"),
        ("bm25", "one-call"),
        ("dense", "one-call"),
        ("hybrid", "one-call"),
        ("full", "agent"),
        ("no-decompose", "agent"),
        ("full+tree", "agent"),
        ("sparse-searcher", "agent"),
    ],
)
def test_pipelines_are_told_apart_by_name(pipeline: str, role: str) -> None:
    assert pipeline_role(pipeline) == role


# --------------------------------------------------------------------------- the analysis


def rows(kinds: list[str], f1: list[float], *, em: list[float] | None = None) -> dict[str, Any]:
    """Rows by id; EM and Acc follow F1 unless given (1 only where F1 is 1)."""
    em = em if em is not None else [1.0 if v == 1.0 else 0.0 for v in f1]
    return {
        f"q{i}": {"id": f"q{i}", "type": kind, "f1": v, "em": e, "acc": e}
        for i, (kind, v, e) in enumerate(zip(kinds, f1, em, strict=True))
    }


KINDS = ["bridge"] * 6 + ["comparison"] * 4


@pytest.fixture
def suite() -> list[RunRows]:
    """On ten questions: hybrid (F1 30) beats bm25 (20), though bm25 alone finished an extra
    question it got right; the oracle has 80, the floor 10, full 55, no-decompose 40."""
    bm25 = rows(KINDS, [1, 1, 0, 0, 0, 0, 0, 0, 0, 0])
    bm25["extra"] = {"id": "extra", "type": "bridge", "f1": 1.0, "em": 1.0, "acc": 1.0}
    return [
        RunRows("bm25", "bm25", bm25),
        RunRows("hybrid", "hybrid", rows(KINDS, [1, 1, 1, 0, 0, 0, 0, 0, 0, 0])),
        RunRows("full", "full", rows(KINDS, [1, 1, 1, 1, 0.5, 0, 1, 0, 0, 0])),
        RunRows("no-decompose", "no-decompose", rows(KINDS, [1, 1, 1, 0, 0, 0, 1, 0, 0, 0])),
        RunRows("oracle", "oracle", rows(KINDS, [1, 1, 1, 1, 1, 1, 1, 1, 0, 0])),
        RunRows("no-retrieval", "no-retrieval", rows(KINDS, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
    ]


def test_the_best_one_call_run_is_picked_on_the_shared_questions(suite: list[RunRows]) -> None:
    result = analyse(suite, resamples=500, seed=0)
    assert len(result.ids) == 10  # bm25's extra question is not shared
    assert result.best_one_call == result.reference == "hybrid"
    assert (result.oracle, result.floor) == ("oracle", "no-retrieval")
    assert result.f1["bm25"] == pytest.approx(20.0)
    assert result.agents == ["full", "no-decompose"]


def test_gains_headroom_and_the_floor_come_from_the_same_questions(
    suite: list[RunRows],
) -> None:
    result = analyse(suite, resamples=500, seed=0)
    full = result.vs_best["full"]
    assert full.mean == pytest.approx(25.0)
    assert (full.wins, full.losses, full.ties) == (3, 0, 7)
    assert result.gains["full"]["em"].mean == pytest.approx(20.0)
    # (55 - 30) / (80 - 30)
    assert result.headroom["full"] == pytest.approx(50.0)
    assert result.headroom["no-decompose"] == pytest.approx(20.0)
    assert result.headroom["bm25"] == pytest.approx(-20.0)
    assert "oracle" not in result.headroom and "hybrid" not in result.vs_best
    assert result.vs_floor["full"].mean == pytest.approx(45.0)
    assert "no-retrieval" not in result.vs_floor


def test_per_type_scores_and_gains_cover_the_agent_runs(suite: list[RunRows]) -> None:
    result = analyse(suite, resamples=500, seed=0)
    assert result.types == ["bridge", "comparison"]
    assert result.type_n == {"bridge": 6, "comparison": 4}
    assert result.type_f1["full"] == {
        "bridge": pytest.approx(100 * 4.5 / 6),
        "comparison": pytest.approx(25.0),
    }
    assert set(result.type_gains) == {"full", "no-decompose"}
    bridge = result.type_gains["full"]["bridge"]
    assert bridge.n == 6 and bridge.mean == pytest.approx(100 * 1.5 / 6)
    assert (bridge.wins, bridge.losses) == (2, 0)


def test_without_a_one_call_run_the_first_run_is_the_reference(
    suite: list[RunRows],
) -> None:
    agents = [r for r in suite if r.role == "agent"]
    result = analyse(agents, resamples=500, seed=0)
    assert result.best_one_call is None and result.reference == "full"
    assert list(result.gains) == ["no-decompose"]
    assert result.vs_best == {} and result.headroom == {} and result.type_gains == {}
    text = paired_markdown(result)
    assert "nothing to measure headroom against" in text
    assert "minus `full` (the first run given" in text


def test_a_comparison_needs_two_distinctly_labelled_runs_with_shared_questions(
    suite: list[RunRows],
) -> None:
    with pytest.raises(ValueError, match="two runs"):
        analyse(suite[:1])
    with pytest.raises(ValueError, match="distinct labels"):
        analyse([suite[0], suite[0]])
    apart = RunRows("x", "full", {"elsewhere": suite[0].rows["q0"]})
    with pytest.raises(ValueError, match="no finished question in common"):
        analyse([suite[0], apart])


def test_each_ablation_is_read_against_the_planner_overall_and_per_type(
    suite: list[RunRows],
) -> None:
    result = analyse(suite, resamples=500, seed=0)
    assert result.planner == "full" and list(result.ablations) == ["no-decompose"]
    # no-decompose loses q3 (1 -> 0) and q4 (0.5 -> 0), both bridge questions
    overall = result.ablations["no-decompose"]["f1"]
    assert overall.mean == pytest.approx(-15.0)
    assert (overall.wins, overall.losses, overall.ties) == (0, 2, 8)
    bridge = result.ablation_types["no-decompose"]["bridge"]
    assert bridge.mean == pytest.approx(-25.0) and bridge.n == 6
    assert result.ablation_types["no-decompose"]["comparison"].mean == pytest.approx(0.0)
    text = paired_markdown(result)
    assert "| no-decompose | decomposition | 40.0 | " in text
    assert f"| {format_gain(overall)} | " in text and "| 0/2/8 |" in text


def test_without_the_planner_an_ablation_is_only_an_agent_run(suite: list[RunRows]) -> None:
    result = analyse([r for r in suite if r.label != "full"], resamples=500, seed=0)
    assert result.planner is None and result.ablations == {}
    assert "no-decompose" in result.vs_best
    assert "## Ablations" not in paired_markdown(result)


def test_the_markdown_has_the_four_sections(suite: list[RunRows]) -> None:
    result = analyse(suite, resamples=500, seed=0)
    text = paired_markdown(result)
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Paired gains (95% bootstrap CI, 500 resamples, seed 0)",
        "## Headroom",
        "## By question type",
        "## Ablations",
    ]
    full = result.vs_best["full"]
    assert f"| full | agent | 10 | {format_gain(full)} |" in text
    assert "| full | agent | 55.0 |" in text and "| 50.0% |" in text
    assert "| oracle | oracle | 80.0 |" in text and "| ceiling |" in text
    assert "| hybrid | one-call | 30.0 | (reference) |" in text
    assert "| bridge | 6 | 33.3 | 50.0 | 75.0 |" in text  # bm25, hybrid, full first
    assert "Note:" not in text  # the means table's warnings are the only notes
    assert paired_markdown(analyse(suite, resamples=500, seed=0)) == text


def test_a_gain_is_printed_signed_so_a_loss_reads_as_one() -> None:
    diff = PairedDiff(n=5, mean=-2.04, low=-7.96, high=3.0, wins=1, losses=2, ties=2)
    assert format_gain(diff) == "-2.0 [-8.0, +3.0]"
    touching = PairedDiff(n=5, mean=20.0, low=-0.04, high=40.0, wins=2, losses=1, ties=2)
    assert format_gain(touching) == "+20.0 [0.0, +40.0]"


# --------------------------------------------------------------------------- cost


def test_a_paired_cost_is_in_its_own_unit_with_the_medians_of_both_runs() -> None:
    reference = {"a": 60.0, "b": 50.0, "c": 40.0, "d": 30.0}
    run = {"a": 50.0, "b": 40.0, "c": 41.0, "d": 20.0}
    diff = paired_cost(run, reference, resamples=2000, seed=0)
    assert diff is not None
    assert diff.n == 4 and diff.mean == pytest.approx(-7.25)  # seconds, not percentage points
    assert (diff.less, diff.more, diff.same, diff.skipped) == (3, 1, 0, 0)
    assert (diff.median, diff.reference_median, diff.median_diff) == (40.5, 45.0, -10.0)
    assert diff.low < diff.mean < diff.high <= 1.0
    # the interval is bootstrap_interval's over the differences in id order
    assert (diff.low, diff.high) == bootstrap_interval([-10.0, -10.0, 1.0, -10.0], resamples=2000)


def test_a_missing_cost_is_left_out_never_counted_as_zero() -> None:
    assert cost_value({"seconds": 3}, "seconds") == 3.0
    assert cost_value({}, "seconds") is None
    assert cost_value({"seconds": None}, "seconds") is None
    assert cost_value({"seconds": True}, "seconds") is None
    # a row without a draft waited its whole seconds for its first answer
    assert cost_value({"seconds": 9.0}, "first_answer_s") == 9.0
    assert cost_value({"seconds": 9.0, "planner": {"first_answer_s": 2.5}}, "first_answer_s") == 2.5
    diff = paired_cost({"a": None, "b": 10.0}, {"a": 50.0, "b": 30.0}, resamples=100)
    assert diff is not None and (diff.n, diff.mean, diff.skipped) == (1, -20.0, 1)
    assert paired_cost({"a": None}, {"a": 50.0}, resamples=100) is None


def test_answers_changed_counts_predictions_that_differ_once_normalised() -> None:
    reference = {"a": {"prediction": "The Beatles."}, "b": {"prediction": "1998"}, "c": {}}
    run = {"a": {"prediction": "beatles"}, "b": {"prediction": "1999"}, "c": {"prediction": ""}}
    assert answers_changed(run, reference) == 1
    assert answers_changed(reference, reference) == 0


def cost_rows(seconds: list[float | None], calls: list[int], answers: list[str]) -> dict[str, Any]:
    out = rows(["bridge"] * len(calls), [0.0] * len(calls))
    for row, spent, n, answer in zip(out.values(), seconds, calls, answers, strict=True):
        row |= {
            "llm_calls": n,
            "prompt_tokens": 10 * n,
            "completion_tokens": n,
            "prediction": answer,
        }
        if spent is not None:
            row["seconds"] = spent
    return out


def test_costs_are_read_against_the_first_run_given_whatever_the_gains_are_read_against() -> None:
    runs = [
        RunRows("full", "full", cost_rows([20.0, 30.0, 40.0], [6, 6, 6], ["x", "y", "z"])),
        RunRows("bm25", "bm25", cost_rows([2.0, 3.0, 4.0], [1, 1, 1], ["x", "n", "z"])),
        RunRows("old", "full", cost_rows([None, None, None], [6, 6, 5], ["x", "y", "z"])),
    ]
    result = analyse(runs, resamples=500, seed=0)
    assert result.reference == "bm25" and result.cost_reference == "full"
    assert list(result.costs) == ["bm25", "old"]
    assert list(result.costs["bm25"]) == ["seconds", "llm_calls", "prompt_tokens",
                                          "completion_tokens"]  # fmt: skip
    seconds = result.costs["bm25"]["seconds"]
    assert seconds is not None and seconds.mean == pytest.approx(-27.0) and seconds.less == 3
    assert result.costs["old"]["seconds"] is None  # no row of it records seconds
    calls = result.costs["old"]["llm_calls"]
    assert calls is not None and (calls.less, calls.same) == (1, 2)
    assert result.answers_changed == {"bm25": 1, "old": 0}
    notes = cost_notes(result)
    assert notes[0].endswith("`bm25` 1 of 3; `old` 0 of 3.")
    assert notes[1].startswith("Seconds compare only between runs made interleaved")
    assert "`old`: 3 of the 3 shared questions have a row without `seconds`" in notes[2]
    text = paired_markdown(result)
    assert "| old | seconds | 0 | n/a |" in text
    assert "Each run minus `full` (the first run given)" in text


def test_rows_that_record_no_cost_have_no_cost_section(suite: list[RunRows]) -> None:
    result = analyse(suite, resamples=500, seed=0)
    assert result.costs == {} and "## Paired cost" not in paired_markdown(result)
