"""``benchmarks/hop_reading.py`` without the model: gold hops filled and shown as the findings
step shows them, each arm's reply scored against the hop's answers, rows resumed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType

import pytest

from evals.datasets import EvalQuestion, GoldHop
from tests.benchmark_module import load_benchmark
from tests.routed_chat import RoutedChatModel

PARAGRAPHS = [
    ("Country Man", "Country Man is a song performed by Luke Bryan, released in 2007."),
    ("Luke Bryan", "Luke Bryan is married to Caroline Boyer. Bryan was born in Leesburg."),
    ("Country Man (album)", "Country Man is an album by Jerry Reed, produced by Chet Atkins."),
    ("Leesburg", "Leesburg is a city in Lee County, Georgia, with a song festival."),
]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("hop_reading")


def question() -> EvalQuestion:
    ids = [f"p{i}" for i in range(len(PARAGRAPHS))]
    hops = [
        GoldHop("Country Man >> performer", "Luke Bryan", "p0", "Country Man"),
        GoldHop("Who is the spouse of #1 ?", "Caroline Boyer", "p1", "Luke Bryan"),
    ]
    return EvalQuestion(
        "2hop__1_2",
        "Who is the spouse of the performer of Country Man?",
        ["Caroline Boyer", "Caroline Bryan"],
        ["Country Man", "Luke Bryan"],
        paragraphs=PARAGRAPHS,
        type="2hop",
        paragraph_ids=ids,
        gold_hops=hops,
    )


def test_hops_are_filled_with_the_earlier_gold_answers(bench: ModuleType) -> None:
    assert bench.hop_text("#2 >> shares border with", ["A", "Columbia"]) == (
        "shares border with Columbia"
    )
    assert bench.hop_text("Country Man >> performer", []) == "performer of Country Man"
    items = bench.hop_items(question(), "alone")
    assert [it.text for it in items] == [
        "performer of Country Man",
        "Who is the spouse of Luke Bryan ?",
    ]
    # the last hop's answer is the question's: its aliases count too
    assert items[0].answers == ["Luke Bryan"]
    assert items[1].answers == ["Caroline Boyer", "Caroline Bryan"]
    assert all(len(it.shown) == 1 and it.gold_position == 1 for it in items)


def test_distractors_are_the_question_paragraphs_ranked_for_the_hop(bench: ModuleType) -> None:
    items = bench.hop_items(question(), "mixed")
    first = items[0]
    assert len(first.shown) == 3 and first.gold_position == 1
    titles = [t for _p, t, _x in first.shown]
    # "performer of Country Man": the album's paragraph shares the title's words; Leesburg none
    assert "Country Man (album)" in titles and "Leesburg" not in titles
    assert items[1].gold_position == 2  # positions cycle over the shown slots


def test_arms_are_scored_against_the_hop_answers(bench: ModuleType, tmp_path: Path) -> None:
    items = bench.hop_items(question(), "mixed")
    findings = {"findings": [{"query": 1, "answer": "Luke Bryan", "passages": [1]}]}
    chat = RoutedChatModel(
        routes={
            "summarize": json.dumps(findings),
            "rag_answer": json.dumps({"answer": "Jerry Reed"}),
        }
    )
    rows = asyncio.run(
        bench.run(chat, items[:1], ["findings", "reader"], split="t", shown="mixed", out=tmp_path)
    )
    by_arm = {r["arm"]: r for r in rows}
    assert by_arm["findings"]["em"] == 1.0 and by_arm["findings"]["supported"]
    assert by_arm["reader"]["em"] == 0.0 and by_arm["reader"]["answer"] == "Jerry Reed"
    table = bench.summarize(bench.load_rows(tmp_path))
    assert table["t/mixed/findings"]["accuracy"] == 100.0
    assert table["t/mixed/reader"]["accuracy"] == 0.0
    assert bench.paired(rows, "reader", "findings") == {"t/mixed": (1, 0, 0)}
    # a rerun reads nothing that is already in the rows
    again = asyncio.run(
        bench.run(chat, items[:1], ["findings", "reader"], split="t", shown="mixed", out=tmp_path)
    )
    assert again == [] and len(chat.seen) == 2


def test_a_failed_reply_is_a_row_not_a_stop(bench: ModuleType, tmp_path: Path) -> None:
    items = bench.hop_items(question(), "alone")
    chat = RoutedChatModel(routes={"rag_answer": "not json at all"})
    rows = asyncio.run(bench.run(chat, items, ["reader"], split="t", shown="alone", out=tmp_path))
    assert len(rows) == 2 and all(r["empty"] and r["em"] == 0.0 for r in rows)


def test_the_report_halves_are_apart_from_the_tuning_half(bench: ModuleType) -> None:
    path, first, last = bench.SPLITS["musique_tune"]
    _same, report_first, report_last = bench.SPLITS["musique_report"]
    assert (first, last) == (0, 87) and report_first == 87 and report_last is None
    if not path.is_file():
        pytest.skip("the shared data files are not beside this checkout")
    tune = {it.qid for it in bench.split_items("musique_tune", "alone")}
    report = {it.qid for it in bench.split_items("musique_report", "alone")}
    assert tune and report and not tune & report


def test_the_committed_figures_hold_the_candidate_and_the_baseline(bench: ModuleType) -> None:
    def row(arm: str, key: str, em: float, shown: str = "mixed") -> dict:
        return {"split": "musique_report", "shown": shown, "arm": arm, "key": key, "em": em,
                "f1": em, "supported": True, "empty": False, "restated": False,
                "gold_position": 1, "seconds": 1.0}  # fmt: skip

    rows = [row("findings", "a", 0.0), row("findings", "b", 1.0), row("reader", "a", 1.0),
            row("reader", "b", 1.0), row("reader", "a", 1.0, "alone")]  # fmt: skip
    out = bench.figures(rows, "reader", "findings")
    assert out["musique_report"] == {"n": 2, "accuracy": 100.0, "f1": 100.0}
    assert out["musique_report_alone"]["n"] == 1
    assert out["baseline"]["musique_report"]["accuracy"] == 50.0
    assert out["baseline"]["arm"] == "findings" and out["arm"] == "reader"
