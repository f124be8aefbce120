"""The answer and retrieval metrics on hand-made cases, against the official HotpotQA rules."""

from __future__ import annotations

import pytest

from evals.datasets import GoldHop
from evals.metrics import (
    accuracy,
    answer_scores,
    best_exact_match,
    best_f1,
    exact_match,
    f1_score,
    gold_recall,
    hop_recall,
    mean_defined,
    retrieval_success,
    unmatched_queries,
)
from searchers.text import normalize_answer_official


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("The Seine", "seine"),
        ("  the   SEINE!! ", "seine"),
        ("A Tale of Two Cities", "tale of two cities"),
        ("an apple, a pear and the plum.", "apple pear and plum"),
        # articles are whole words only: letters inside words stay
        ("Theatre another Thea", "theatre another thea"),
        ("J. R. R. Tolkien", "j r r tolkien"),
        ("Missoula, Montana", "missoula montana"),
        ("U.S.A.", "usa"),
        ("1,000", "1000"),
        # unicode: lowercased, accents kept; "the" glued to a non-ASCII letter is not a word
        ("Małgorzata Braunek", "małgorzata braunek"),
        ("ÉIRE", "éire"),
        ("Thé dansant", "thé dansant"),
        # the official script strips ASCII punctuation only: curly quotes and dashes remain
        ("“Seine”", "“seine”"),
        ("1914–1918", "1914–1918"),
        ("", ""),
    ],
)
def test_normalization_is_the_official_one(raw: str, normalized: str) -> None:
    assert normalize_answer_official(raw) == normalized


def test_exact_match_after_normalization() -> None:
    assert exact_match("the Seine.", "Seine") == 1.0
    assert exact_match("Seine river", "Seine") == 0.0
    assert exact_match("ÉIRE", "éire") == 1.0


def test_token_f1() -> None:
    assert f1_score("Seine", "Seine") == 1.0
    # precision 1/2, recall 1/1
    assert f1_score("Seine river", "the Seine") == pytest.approx(2 / 3)
    # repeated tokens count once per occurrence in both
    assert f1_score("paris paris", "paris") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert f1_score("London", "Paris") == 0.0
    assert f1_score("", "Paris") == 0.0


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("yes", "yes", 1.0),
        ("Yes.", "yes", 1.0),
        ("no", "yes", 0.0),
        # a yes/no side gets no partial credit against anything else
        ("no", "no way", 0.0),
        ("no way", "no", 0.0),
        ("yes it is", "yes", 0.0),
        ("noanswer", "the answer", 0.0),
    ],
)
def test_f1_is_zero_when_yes_no_differs(prediction: str, gold: str, expected: float) -> None:
    assert f1_score(prediction, gold) == expected


def test_accuracy_is_gold_inside_prediction() -> None:
    assert accuracy("It is the Seine, in Paris.", "The Seine") == 1.0
    assert accuracy("Paris", "Seine") == 0.0
    # plain substring, as LevelRAG and FlashRAG compute it
    assert accuracy("not known", "no") == 1.0
    # a gold answer that normalizes to nothing matches nothing
    assert accuracy("anything at all", "The") == 0.0


def test_best_over_aliases() -> None:
    golds = ["Missoula", "Missoula, Montana"]
    assert best_exact_match("Missoula Montana", golds) == 1.0
    assert best_f1("Missoula county", golds) == pytest.approx(2 / 3)
    assert best_exact_match("Helena", golds) == 0.0
    assert best_exact_match("anything", []) == 0.0
    # each metric takes its own best alias
    scores = answer_scores(
        "Charles Armand Rene de La Tremoille", ["Trémoille", "Charles Armand Rene de La Tremoille"]
    )
    assert scores == {"em": 1.0, "f1": 1.0, "acc": 1.0}
    scores = answer_scores("galati city", ["Galați", "Galati"])
    assert scores["em"] == 0.0 and scores["acc"] == 1.0 and scores["f1"] == pytest.approx(2 / 3)


def test_retrieval_success_matches_whole_tokens() -> None:
    contexts = ["The Hobbit: The Hobbit was first published in 1937.", "Bilbo Baggins ..."]
    assert retrieval_success(["1937"], contexts) == 1.0
    # "1" and "Hob" are inside other tokens only
    assert retrieval_success(["1"], contexts) == 0.0
    assert retrieval_success(["Hob"], contexts) == 0.0
    # normalization applies to both sides; any alias will do
    assert retrieval_success(["J.R.R. Tolkien", "Tolkien"], ["a novel by J. R. R. Tolkien"]) == 1.0
    assert retrieval_success(["Seine"], []) == 0.0
    # an answer split across two passages was not found in either
    assert retrieval_success(["Paris France"], ["in Paris", "France is"]) == 0.0
    assert retrieval_success(["Paris France"], ["in Paris", "Paris, France is"]) == 1.0


def test_retrieval_success_is_undefined_for_yes_no() -> None:
    assert retrieval_success(["yes"], ["yes, both do"]) is None
    assert retrieval_success(["No"], []) is None
    assert retrieval_success(["the"], ["the"]) is None  # nothing findable after normalization


def test_gold_recall() -> None:
    assert gold_recall(["Eiffel Tower", "Seine"], ["Seine", "Louvre"]) == 0.5
    assert gold_recall(["Eiffel Tower", "Seine"], ["Seine", "Eiffel Tower", "Seine"]) == 1.0
    assert gold_recall(["Seine"], []) == 0.0
    assert gold_recall([], ["Seine"]) is None
    # titles are compared exactly: they are paragraph ids
    assert gold_recall(["Ed Wood"], ["Ed Wood (film)"]) == 0.0


HOPS = [
    GoldHop("capital of France", "Paris", "paris-1", "Paris"),
    GoldHop("river through #1", "Seine", "seine-2", "Seine"),
    GoldHop("#2 >> mouth", "Le Havre", "seine-2", "Seine"),  # one paragraph, two hops
    GoldHop("#3 >> country", "France", "le-havre-3", "Le Havre"),
]


def test_hop_recall_counts_hops_by_passage_id() -> None:
    assert hop_recall(HOPS, ["seine-2", "danube-9"]) == 0.5  # one paragraph finds two hops
    assert hop_recall(HOPS, ["paris-1", "seine-2", "le-havre-3", "paris-1"]) == 1.0
    assert hop_recall(HOPS, []) == 0.0
    assert hop_recall([], ["paris-1"]) is None
    # ids, not titles: another "Paris" paragraph is not the gold one
    assert hop_recall(HOPS[:1], ["paris-texas-7"]) == 0.0


def test_unmatched_queries_are_the_ones_that_found_no_gold_hop() -> None:
    per_query = [["paris-1", "x"], ["x", "y"], [], ["seine-2"], ["le-havre-3"]]
    assert unmatched_queries(HOPS, per_query) == 2
    assert unmatched_queries(HOPS, []) == 0
    assert unmatched_queries([], [["paris-1"], []]) == 2  # callers skip questions without hops


def test_hop_recall_is_averaged_over_the_rows_that_define_it_overall_and_per_type() -> None:
    from evals.aggregate import aggregate

    base = {"em": 0.0, "f1": 0.0, "acc": 0.0}
    rows = [
        {**base, "type": "2hop", "hop_recall": 1.0},
        {**base, "type": "2hop", "hop_recall": 0.5},
        {**base, "type": "4hop", "hop_recall": 0.25},
        {**base, "type": "bridge", "hop_recall": None},  # HotpotQA: no gold hops
        {**base, "type": "bridge"},  # a row from before the field existed
    ]
    metrics = aggregate(rows)
    assert metrics["hop_recall"] == pytest.approx(58.33) and metrics["hop_recall_n"] == 3
    assert metrics["by_type"]["2hop"]["hop_recall"] == 75.0
    assert metrics["by_type"]["2hop"]["hop_recall_n"] == 2
    assert metrics["by_type"]["4hop"]["hop_recall"] == 25.0
    assert metrics["by_type"]["bridge"]["hop_recall"] is None
    assert metrics["by_type"]["bridge"]["hop_recall_n"] == 0
    assert aggregate([rows[-1]])["hop_recall"] is None


def test_mean_defined() -> None:
    assert mean_defined([1.0, None, 0.0]) == 0.5
    assert mean_defined([None, None]) is None
    assert mean_defined([]) is None


def test_cost_is_reported_as_mean_and_median() -> None:
    """One question that loops to the budget moves the mean, not the median."""
    from evals.aggregate import aggregate
    from evals.report import report_markdown

    rows = [
        {
            "em": 1.0,
            "f1": 1.0,
            "acc": 1.0,
            "llm_calls": calls,
            "prompt_tokens": 100 * calls,
            "completion_tokens": 10 * calls,
            "seconds": float(calls),
        }
        for calls in (10, 12, 14, 50)
    ]
    metrics = aggregate(rows)
    assert metrics["llm_calls_per_question"] == 21.5 and metrics["llm_calls_median"] == 13.0
    assert metrics["prompt_tokens_median"] == 1300.0 and metrics["seconds_median"] == 13.0
    assert metrics["completion_tokens_median"] == 130.0
    assert "| LLM calls | 21.50 | 13.00 |" in report_markdown(metrics, plot_name=None)


def test_a_pipeline_without_retrieval_reports_no_retrieval_scores() -> None:
    """`no-retrieval` has no context: its report says so rather than "n/a over 0 questions"."""
    from evals.aggregate import aggregate
    from evals.report import report_markdown

    blind = {"em": 0.0, "f1": 0.5, "acc": 0.0, "retrieval_success": None, "gold_recall": None}
    report = report_markdown(aggregate([blind, blind]), plot_name=None)
    assert "| Retrieval success | n/a (the pipeline retrieves nothing) |" in report
    assert "| Gold-paragraph recall | n/a (the pipeline retrieves nothing) |" in report
    seen = {**blind, "retrieval_success": 1.0, "gold_recall": 0.5}
    report = report_markdown(aggregate([seen, {**seen, "retrieval_success": None}]), plot_name=None)
    assert "| Retrieval success | 100.00 (over 1 questions with a span answer) |" in report
    assert "| Gold-paragraph recall | 50.00 (over 2 questions) |" in report


def test_cache_hits_are_reported_over_the_rows_that_recorded_them() -> None:
    """A run that reuses another's calls spends few tokens; the report says what it would spend
    alone, and rows from before the field existed count as unknown, not as no hits."""
    from evals.aggregate import aggregate
    from evals.report import report_markdown

    base = {"em": 0.0, "f1": 0.0, "acc": 0.0, "llm_calls": 20, "seconds": 1.0}
    rows = [
        {**base, "prompt_tokens": 0, "llm_cache_hits": 20, "cache_hit_prompt_tokens": 6000},
        {**base, "prompt_tokens": 4000, "llm_cache_hits": 8, "cache_hit_prompt_tokens": 2000},
        {**base, "prompt_tokens": 5000},  # written before hits were recorded
    ]
    metrics = aggregate(rows)
    assert metrics["llm_cache_recorded_n"] == 2
    assert metrics["llm_cache_hits_per_question"] == 14.0
    assert metrics["prompt_tokens_without_cache_per_question"] == 6000.0
    assert metrics["prompt_tokens_per_question"] == 3000.0  # spent, all three rows
    report = report_markdown(metrics, plot_name=None)
    assert "served from the cache: 14.00 a question" in report
    assert "6000 a question (over the 2 questions recorded)" in report
    assert "served from the cache" not in report_markdown(aggregate(rows[2:]), plot_name=None)


def test_a_comparison_shows_the_cache_share_and_whom_it_flatters() -> None:
    """Three runs as ``eval compare`` sees them: one recorded on every row, one resumed across
    the change (recorded on some rows), one from before it. The partial one says over how many
    questions; the old one says n/a rather than zero; the one that took hits is named."""
    from pathlib import Path

    from evals.aggregate import aggregate
    from evals.compare import comparison_markdown

    base = {"em": 0.0, "f1": 0.0, "acc": 0.0, "llm_calls": 20, "seconds": 1.0}
    hit = {**base, "prompt_tokens": 1000, "llm_cache_hits": 5, "cache_hit_prompt_tokens": 500}
    cold = {**base, "prompt_tokens": 1500, "llm_cache_hits": 0, "cache_hit_prompt_tokens": 0}
    old = {**base, "prompt_tokens": 1500}
    runs = [
        (Path("a"), {**aggregate([hit, hit]), "pipeline": "full+tree"}),
        (Path("b"), {**aggregate([cold, old]), "pipeline": "full"}),
        (Path("c"), {**aggregate([old, old]), "pipeline": "bm25"}),
    ]
    table = comparison_markdown(runs)
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()[2:5]}
    assert rows["full+tree"].endswith("| 5.00 | 1500 |")
    assert rows["full"].endswith("| 0.00 (1 of 2) | 1500 (1 of 2) |")
    assert rows["bm25"].endswith("| n/a | n/a |")
    assert "Note: full+tree took calls from the LLM cache" in table
    assert "full," not in table.split("Note:")[-1]


def test_planner_rounds_and_stops_are_summed_over_the_rows_that_record_them() -> None:
    """Rows from before the planner record existed are left out, and the report says over how
    many questions the means are."""
    from evals.aggregate import aggregate
    from evals.report import report_markdown

    base = {"em": 0.0, "f1": 0.0, "acc": 0.0, "llm_calls": 20, "prompt_tokens": 1, "seconds": 1}
    first = [{"query": "a", "origin": "decompose", "round": 1, "answered": True}]
    follow = [{"query": "b", "origin": "supplement", "round": 2, "answered": False}]
    rows = [
        {**base, "planner": {"rounds": 1, "stopped": "sufficient", "sub_queries": first}},
        {**base, "planner": {"rounds": 2, "stopped": "max_rounds", "sub_queries": first + follow}},
        {**base, "planner": {"rounds": 2, "stopped": "max_rounds", "sub_queries": first + follow}},
        base,  # written before the record existed
    ]
    metrics = aggregate(rows)
    assert metrics["planner_recorded_n"] == 3
    assert metrics["planner_rounds_per_question"] == 1.67
    assert metrics["planner_queries_per_question"] == 1.67
    assert metrics["planner_followups_per_question"] == 0.67
    assert metrics["planner_stopped"] == {"max_rounds": 2, "sufficient": 1}
    report = report_markdown(metrics, plot_name=None)
    assert "of them follow-ups (over the 3 questions recorded). " in report
    assert "Stopped: max_rounds 2, sufficient 1." in report
    assert "planner_recorded_n" not in aggregate([base])


def test_rows_say_which_code_made_them_and_a_comparison_says_when_it_differs() -> None:
    from pathlib import Path

    from evals.aggregate import aggregate
    from evals.compare import comparison_markdown
    from evals.report import report_markdown

    base = {"em": 0.0, "f1": 0.0, "acc": 0.0, "llm_calls": 1, "prompt_tokens": 1, "seconds": 1}
    old = aggregate([{**base, "code": "fd30e3b"}, {**base, "code": "fd30e3b"}])
    new = aggregate([{**base, "code": "4cdfc3f"}, base])  # one row from before the field
    assert old["code_versions"] == {"fd30e3b": 2} and new["code_versions"] == {"4cdfc3f": 1}
    assert "| code | `4cdfc3f` (1), not recorded (1) |" in report_markdown(new, plot_name=None)
    assert "| code | not recorded |" in report_markdown(aggregate([base]), plot_name=None)

    same = comparison_markdown([(Path("a"), {**old, "pipeline": "full"}), (Path("b"), old)])
    assert "different code" not in same
    table = comparison_markdown(
        [(Path("a"), {**old, "pipeline": "full"}), (Path("b"), {**new, "pipeline": "bm25"})]
    )
    assert "Note: the runs were made with different code (full: fd30e3b; bm25: 4cdfc3f)" in table
    mixed = aggregate([{**base, "code": "fd30e3b"}, {**base, "code": "4cdfc3f"}])
    table = comparison_markdown([(Path("a"), {**mixed, "pipeline": "full"})])
    assert "rows of one run come from several commits: full (4cdfc3f, fd30e3b)" in table


@pytest.mark.parametrize("count", [1, 10, 11, 20, 21, 40])
def test_every_run_in_a_comparison_plot_gets_its_own_colour(count: int) -> None:
    from evals.report import run_colors

    colors = run_colors(count)
    assert len(colors) == count and len(set(colors)) == count
