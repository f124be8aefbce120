"""``evals/plan_outcomes.py`` and ``hoptree eval plans``: each plan lands in the first class that
fits its rows and the gold hops, and a run is read against the question file it answered."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent.cli.main import app
from evals.datasets import EvalQuestion, load_questions
from evals.plan_outcomes import (
    PlanOutcomeError,
    PlanOutcomes,
    classify_plan,
    plan_outcomes,
    plan_outcomes_markdown,
)
from tests.evals.test_musique import musique_row, other_row

QUESTION = "Which river flows through the capital of France?"


@pytest.fixture(scope="module")
def question(tmp_path_factory: pytest.TempPathFactory) -> EvalQuestion:
    path = tmp_path_factory.mktemp("plans") / "musique.jsonl"
    path.write_text(json.dumps(musique_row()) + "\n")
    [q] = load_questions(path, "musique")
    return q


def sub(query: str, finding: str = "", passages: list[str] | None = None) -> dict[str, Any]:
    return {"query": query, "answered": bool(finding), "finding": finding,
            "passage_ids": passages or []}  # fmt: skip


def row(*subs: dict[str, Any], resolved: bool = False, **check: Any) -> dict[str, Any]:
    return {"id": "2hop__100_200", "f1": 1.0 if resolved else 0.0,
            "planner": {"sub_queries": list(subs),
                        "citation_check": {"plan_resolved": resolved, **check}}}  # fmt: skip


def test_each_plan_falls_in_the_first_class_that_fits(question: EvalQuestion) -> None:
    paris, seine = (hop.passage_id for hop in question.gold_hops)
    danube = "danube-id"
    capital, river = "capital of France", "river through Paris"
    on_chain = row(sub(capital, "Paris"), sub(river, "the Seine"), resolved=True)
    assert classify_plan(on_chain, question) == "resolved"
    astray = row(sub(capital, "Lyon"), sub(river, "Rhône"), resolved=True)
    assert classify_plan(astray, question) == "resolved off the chain"
    nameless = row(sub(capital, "Paris"), sub("flows through"), nameless_queries=["q2"])
    assert classify_plan(nameless, question) == "open: nameless query"
    wrong = row(sub(capital, "Lyon"), sub("river through Lyon", "", [seine]))
    assert classify_plan(wrong, question) == "open: a wrong finding"
    shown = row(sub(capital, "Paris"), sub(river, "", [danube, seine]))
    assert classify_plan(shown, question) == "open: gold shown, unsupported"
    below = row(sub(capital, "Paris"), sub(river, "", [danube, "a", "b", seine]))
    assert classify_plan(below, question) == "open: gold retrieved, not shown"
    assert classify_plan(below, question, shown=4) == "open: gold shown, unsupported"
    lost = row(sub(capital, "Paris", [paris]), sub(river, "", [danube]))
    assert classify_plan(lost, question) == "open: gold not retrieved"
    # no plan (a one-call run's row) or no gold hops: nothing to say
    assert classify_plan({"id": "x", "f1": 0.0}, question) is None
    bare = EvalQuestion("x", QUESTION, ["Seine"], [])
    assert classify_plan(on_chain, bare) is None


def test_without_gold_hops_plans_are_classed_by_the_gold_paragraphs() -> None:
    """HotpotQA: gold paragraphs, no gold hops. A resolved plan cannot be checked against the
    chain, and a finding that is no hop's answer cannot be told apart from a right one."""
    band = "tinted-windows-band-id"
    hotpot = EvalQuestion("h1", "Where did the band play first?", ["Tulsa"], ["Tinted Windows"],
                          supporting_ids=[band])  # fmt: skip
    name, city = "band that released Tinted Windows", "first performance of #1"
    resolved = row(sub(name, "Hanson"), sub(city, "Austin"), resolved=True)
    assert classify_plan(resolved, hotpot) == "resolved"
    shown = row(sub(name, "Hanson"), sub(city, "", ["a", band]))
    assert classify_plan(shown, hotpot) == "open: gold shown, unsupported"
    below = row(sub(name, "Hanson"), sub(city, "", ["a", "b", "c", band]))
    assert classify_plan(below, hotpot) == "open: gold retrieved, not shown"
    lost = row(sub(name, "", ["a"]))
    assert classify_plan(lost, hotpot) == "open: gold not retrieved"
    nameless = row(sub(name, "Hanson"), sub("where", ""), nameless_queries=["where"])
    assert classify_plan(nameless, hotpot) == "open: nameless query"
    table = plan_outcomes_markdown(
        [PlanOutcomes("hotpotqa/full", {"resolved": 1}, {"resolved": 100.0}, unchecked=1)]
    )
    assert "1 of 1 questions have gold paragraphs but no gold hops" in table


def write_run(tmp_path: Path, dataset: Path, rows: list[dict[str, Any]]) -> Path:
    run = tmp_path / "musique" / "full"
    run.mkdir(parents=True)
    meta = {"dataset": str(dataset), "pipeline": "full",
            "dataset_sha256": hashlib.sha256(dataset.read_bytes()).hexdigest(),
            "planner_settings": {"planner.summary_passages": 4}}  # fmt: skip
    (run / "run.json").write_text(json.dumps(meta))
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_a_run_is_read_against_its_own_question_file(tmp_path: Path) -> None:
    dataset = tmp_path / "musique.jsonl"
    dataset.write_text(json.dumps(musique_row()) + "\n")
    [q] = load_questions(dataset, "musique")
    seine = q.gold_hops[1].passage_id
    # the run read four passages per findings call: rank 4 was shown
    open_row = row(sub("capital of France", "Paris"), sub("river", "", ["a", "b", "c", seine]))
    run = write_run(tmp_path, dataset, [open_row, {"id": "unknown", "f1": 0.0}])
    result = plan_outcomes(run)
    assert result.counts == {"open: gold shown, unsupported": 1} and result.unclassified == 1
    assert result.run == "musique/full" and result.f1["open: gold shown, unsupported"] == 0.0

    # another run's F1 on each class's questions: what the oracle made of the same ones
    oracle = tmp_path / "musique" / "oracle"
    oracle.mkdir()
    (oracle / "details.jsonl").write_text(json.dumps({"id": "2hop__100_200", "f1": 0.5}) + "\n")
    result = plan_outcomes(run, against=[oracle])
    assert result.others == {"open: gold shown, unsupported": {"oracle": 50.0}}

    md = tmp_path / "p.md"
    args = ["eval", "plans", str(run), "--against", str(oracle), "--markdown", str(md)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    text = md.read_text()
    assert "| musique/full | 1 |" in text
    assert "| open: gold shown, unsupported | 1 | 0.0 | 50.0 |" in text

    dataset.write_text(json.dumps(musique_row(answer="Loire")) + "\n")  # another file now
    with pytest.raises(PlanOutcomeError, match="not the question file the run answered"):
        plan_outcomes(run)
    out = CliRunner().invoke(app, ["eval", "plans", str(run)])
    assert out.exit_code != 0 and "not the question file" in out.output


def test_plans_are_counted_by_question_type(tmp_path: Path) -> None:
    dataset = tmp_path / "musique.jsonl"
    dataset.write_text(json.dumps(musique_row()) + "\n" + json.dumps(other_row()) + "\n")
    resolved = row(sub("capital of France", "Paris"), sub("river", "Seine"), resolved=True)
    wrong = {
        **row(sub("state of Paris", "France"), sub("county of #1")),
        "id": "3hop1__300_400_500",
    }
    run = write_run(tmp_path, dataset, [resolved, wrong])
    result = plan_outcomes(run)
    assert result.by_type == {"2hop": {"resolved": 1}, "3hop": {"open: a wrong finding": 1}}
    assert result.type_f1 == {"2hop": 100.0, "3hop": 0.0}
    text = plan_outcomes_markdown([result])
    assert "musique/full by question type" in text
    assert "| 2hop | 1 | 100.0 | 1 | 0 |" in text and "| 3hop | 1 | 0.0 | 0 | 0 | 0 | 1 |" in text
