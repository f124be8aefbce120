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


def recorded_row(second: dict | None = None) -> dict:
    """A ``full`` run's row for ``question()``: the planner's two decompose queries (the second
    linked to the first and searched with its answer filled) and a supplement query."""
    subs = [
        {"id": "q1", "query": "singer of Country Man", "origin": "decompose", "round": 1,
         "needs": []},
        second or {"id": "q2", "query": "wife of Luke Bryan, not of Jerry Reed",
                   "origin": "decompose", "round": 2, "needs": ["q1"]},
        {"id": "q3", "query": "spouse of Luke Bryan?", "origin": "supplement", "round": 3,
         "needs": []},
    ]  # fmt: skip
    return {"id": "2hop__1_2", "planner": {"sub_queries": subs}}


def test_planner_items_are_the_gold_hops_as_the_planner_searched_them(bench: ModuleType) -> None:
    gold = bench.hop_items(question(), "mixed")
    items = bench.planner_items(question(), gold, recorded_row())
    assert [(it.key, it.text, it.query_id) for it in items] == [
        ("2hop__1_2#1", "singer of Country Man", "q1"),
        ("2hop__1_2#2", "wife of Luke Bryan, not of Jerry Reed", "q2"),  # matched by its link
    ]
    assert all(it.phrasing == "planner" for it in items)
    # "singer" names no word of "performer": matched by its subject, the relation not asked
    assert [it.asked for it in items] == [False, True]
    for it, g in zip(items, gold, strict=True):
        assert (it.answers, it.gold_id, it.gold_position) == (g.answers, g.gold_id, g.gold_position)
    # the distractors are ranked for the planner's text: Jerry Reed's album, not Leesburg
    assert [t for _p, t, _x in gold[1].shown] == ["Country Man", "Luke Bryan", "Leesburg"]
    assert [t for _p, t, _x in items[1].shown] == ["Country Man", "Luke Bryan",
                                                   "Country Man (album)"]  # fmt: skip
    alone = bench.planner_items(question(), bench.hop_items(question(), "alone"), recorded_row())
    assert all(len(it.shown) == 1 for it in alone)
    assert bench.planner_items(question(), gold, None) == []


def test_a_hop_the_planner_never_searched_makes_no_item(bench: ModuleType) -> None:
    waiting = {"id": "q2", "query": "spouse of #1", "origin": "decompose", "round": 0,
               "needs": ["q1"]}  # fmt: skip
    gold = bench.hop_items(question(), "mixed")
    items = bench.planner_items(question(), gold, recorded_row(waiting))
    assert [it.key for it in items] == ["2hop__1_2#1"]
    unlinked = {"id": "q2", "query": "wife of a singer", "origin": "decompose", "round": 1,
                "needs": []}  # fmt: skip
    assert len(bench.planner_items(question(), gold, recorded_row(unlinked))) == 1


@pytest.fixture
def recorded_split(bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A split "t" of ``question()`` alone, its recorded run in ``tmp_path``."""
    details = tmp_path / "details.jsonl"
    details.write_text(json.dumps(recorded_row()) + "\n", encoding="utf-8")
    monkeypatch.setattr(bench, "SPLITS", {"t": (tmp_path / "questions.jsonl", 0, None)})
    monkeypatch.setattr(bench, "ROWS", {"t": details})
    monkeypatch.setattr(bench, "load_questions", lambda path, fmt: [question()])
    monkeypatch.setattr(bench, "resolve_format", lambda path: "musique")
    return "t"


def test_gold_phrasing_stays_the_default(bench: ModuleType, recorded_split: str) -> None:
    default = bench.split_items(recorded_split, "mixed")
    assert default == bench.hop_items(question(), "mixed")
    assert [(it.text, it.phrasing, it.query_id) for it in default] == [
        ("performer of Country Man", "gold", ""),
        ("Who is the spouse of Luke Bryan ?", "gold", ""),
    ]
    args = bench.parser().parse_args(["--split", "t", "--arm", "reader", "--out", "x"])
    assert args.phrasing is None  # main reads ["gold"] then
    planner = bench.split_items(recorded_split, "mixed", phrasing="planner")
    assert [it.text for it in planner] == ["singer of Country Man",
                                           "wife of Luke Bryan, not of Jerry Reed"]  # fmt: skip
    assert bench.split_items(recorded_split, "mixed", phrasing="gold_matched") == default
    assert bench.count([recorded_split], None, None) == [
        "t: gold 2 hops, 2 of questions with a recorded row; planner 2 items (hops matched 2 of "
        "2, 0 of them never searched; 1 items also name the hop's relation)"
    ]


def test_gold_and_planner_rows_of_a_hop_pair(
    bench: ModuleType, recorded_split: str, tmp_path: Path
) -> None:
    def reply(messages: list) -> str:  # the reader reads the planner's "wife" hop wrong
        wife = "wife of" in str(messages[-1].content)
        return json.dumps({"answer": "Luke Bryan" if wife else "Caroline Boyer"})

    chat = RoutedChatModel(routes={"rag_answer": reply})
    out = tmp_path / "rows"
    for phrasing in ("gold", "planner", "gold", "planner"):
        items = bench.split_items(recorded_split, "alone", phrasing=phrasing)[1:]
        asyncio.run(bench.run(chat, items, ["reader"], split="t", shown="alone", out=out))
    rows = bench.load_rows(out)
    # each phrasing read once: neither is taken as done for the other, both resume
    assert len(rows) == 2 and len(chat.seen) == 2
    by = {r["phrasing"]: r for r in rows}
    assert by["gold"]["key"] == by["planner"]["key"] == "2hop__1_2#2"
    assert by["planner"]["query_id"] == "q2" and "query_id" not in by["gold"]
    table = bench.summarize(rows)
    assert table["t/alone/reader"]["accuracy"] == 100.0
    assert table["t/planner/alone/reader"]["accuracy"] == 0.0
    assert bench.phrasing_paired(rows, "reader") == {"t/alone": (0, 1, 0)}
    assert bench.paired(rows, "reader", "findings") == {}  # phrasings are not arms
    assert set(bench.figures(rows, "reader", "findings")) >= {"t_alone", "t_planner_alone"}


def test_hops_asked_as_questions(bench: ModuleType) -> None:
    assert (
        bench.as_question("author of The Lantern Atlas")
        == "Who is the author of The Lantern Atlas?"
    )
    assert (
        bench.as_question("city where Orrin Vale died") == "What is the city where Orrin Vale died?"
    )
    assert bench.as_question("who wrote Country Man") == "who wrote Country Man?"
    assert (
        bench.asked_text("Country Man >> performer", []) == "Who is the performer of Country Man?"
    )
    assert bench.asked_text("#1 >> shares border with", ["Leesburg"]) == (
        "What shares a border with Leesburg?"
    )
    located = bench.asked_text("Leesburg >> located in the administrative territorial entity", [])
    assert located == "What administrative territorial entity is Leesburg located in?"
    assert bench.asked_text("Who is the spouse of #1 ?", ["Luke Bryan"]) == (
        "Who is the spouse of Luke Bryan ?"
    )


def test_the_surest_held_read_is_chosen(bench: ModuleType) -> None:
    reads = [
        {"answer": "Jerry Reed", "logprobs": [-0.01], "held": True, "restated": False},
        {"answer": "Luke Bryan", "logprobs": [-0.2, -0.1], "held": True, "restated": False},
        {"answer": "Country Man", "logprobs": [0.0], "held": True, "restated": True},
        {"answer": "", "logprobs": [], "held": False, "restated": False},
    ]
    assert bench.choose_read(reads) == "Jerry Reed"
    reads[0]["held"] = False  # a span its passage does not hold is passed over
    assert bench.choose_read(reads) == "Luke Bryan"
    assert bench.choose_read([reads[3]]) == ""


def test_each_passage_is_read_alone(bench: ModuleType, tmp_path: Path) -> None:
    item = bench.hop_items(question(), "mixed")[1]
    seen: list[str] = []

    def read(messages: list) -> str:
        text = str(messages[-1].content)
        seen.append(text)
        return json.dumps({"answer": "Caroline Boyer" if "Caroline" in text else "Jerry Reed"})

    chat = RoutedChatModel(routes={"rag_answer": read})
    rows = asyncio.run(
        bench.run(chat, [item], ["reader_each"], split="musique_tune", shown="mixed", out=tmp_path)
    )
    assert len(seen) == 3 and all(text.count("[1]") == 1 and "[2]" not in text for text in seen)
    assert rows[0]["answer"] == "Caroline Boyer" and rows[0]["em"] == 1
    assert rows[0]["calls"] == 3 and len(rows[0]["detail"]["reads"]) == 3


def test_the_free_reader_reads_the_hop_over_whole_passages(
    bench: ModuleType, tmp_path: Path
) -> None:
    item = bench.hop_items(question(), "mixed")[1]
    seen: list[list] = []

    def read(messages: list) -> str:
        seen.append(messages)
        return "Answer: Caroline Boyer."

    chat = RoutedChatModel(routes={"rag_answer": read})
    rows = asyncio.run(
        bench.run(chat, [item], ["reader_free"], split="t", shown="mixed", out=tmp_path)
    )
    system, user = (str(m.content) for m in seen[0])
    # the shown passages whole, titled, in the system message; the hop alone as the user's
    assert all(f"(Title: {title})" in system for _p, title, _x in item.shown)
    assert "Luke Bryan is married to Caroline Boyer. Bryan was born in Leesburg." in system
    assert item.text in user and "Caroline" not in user
    assert rows[0]["answer"] == "Caroline Boyer" and rows[0]["em"] == 1.0


def test_rows_of_another_model_carry_its_name(bench: ModuleType, tmp_path: Path) -> None:
    items = bench.hop_items(question(), "alone")[:1]
    chat = RoutedChatModel(routes={"rag_answer": json.dumps({"answer": "Luke Bryan"})})
    small = "qwen2.5-coder-0.5b"
    rows = asyncio.run(
        bench.run(chat, items, ["reader"], split="t", shown="alone", out=tmp_path, model=small)
    )
    assert rows[0]["arm"] == f"reader@{small}"
    # the default model's rows of the same arm are still to read; the small model's are not
    again = asyncio.run(
        bench.run(chat, items, ["reader"], split="t", shown="alone", out=tmp_path, model=small)
    )
    model = bench.DEFAULT_MODEL
    default = asyncio.run(
        bench.run(chat, items, ["reader"], split="t", shown="alone", out=tmp_path, model=model)
    )
    assert again == [] and [r["arm"] for r in default] == ["reader"]
    assert set(bench.summarize(bench.load_rows(tmp_path))) == {
        "t/alone/reader",
        f"t/alone/reader@{small}",
    }
