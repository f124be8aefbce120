"""``benchmarks/open_answer_ab.py`` without the model: a recorded open plan's passages are rebuilt
from the row (the answer's sources by title, each finding's first passage, each hop's first two)
and each arm reads what it should, in the prompt it should."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType

import pytest

from agent.settings import PlannerSettings
from searchers.corpus import paragraph_id
from tests.benchmark_module import load_benchmark
from tests.locations import TESTS
from tests.routed_chat import RoutedChatModel

TINY = TESTS / "data_eval" / "eval_tiny_hotpot.jsonl"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("open_answer_ab")


def recorded_run(tmp_path: Path) -> Path:
    """One open plan answered as one-call RAG, one resolved plan (not an item)."""
    eiffel, seine, louvre = (paragraph_id(t) for t in ("Eiffel Tower", "Seine", "Louvre"))
    subs = [
        {"query": "city of the Eiffel Tower", "answered": True, "finding": "Paris",
         "needs": [], "passage_ids": [eiffel, louvre]},
        {"query": "river through #1", "answered": False, "finding": "", "needs": ["q1"],
         "passage_ids": [seine]},
    ]  # fmt: skip
    rows = [
        {"id": "tiny-1", "prediction": "Louvre", "f1": 0.0, "planner": {
            "sub_queries": subs, "sources": ["Louvre", "Seine"],
            "citation_check": {"answered_as": "one_call"}}},
        {"id": "tiny-2", "prediction": "1937", "f1": 1.0, "planner": {
            "sub_queries": [], "sources": [], "citation_check": {"plan_resolved": True}}},
    ]  # fmt: skip
    run = tmp_path / "full"
    run.mkdir()
    (run / "details.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return run


def test_each_arm_reads_its_passages(bench: ModuleType, tmp_path: Path) -> None:
    [item] = bench.open_rows(TINY, recorded_run(tmp_path))
    ids = {t: paragraph_id(t) for t in ("Eiffel Tower", "Seine", "Louvre")}
    assert item["question_hits"] == [ids["Louvre"], ids["Seine"]]
    assert item["finding_first"] == [ids["Eiffel Tower"]]
    assert item["findings"] == [("city of the Eiffel Tower", "Paris")]
    chat = RoutedChatModel(
        routes={
            "rag_answer": json.dumps({"answer": "Seine"}),
            "answer": json.dumps({"short_answer": "the Seine", "answer": "It is the Seine [1]."}),
        }
    )
    cfg = PlannerSettings(draft=False, supplement=True, findings_call="batched")
    answers = {arm: asyncio.run(bench.answer(chat, arm, item, cfg)) for arm in bench.ARMS}
    assert answers == {
        "one_call": "Seine", "findings_first": "Seine", "hops": "Seine", "chain": "the Seine"
    }  # fmt: skip
    prompts = [text for _, text in chat.seen]
    shown = [p.split("Passages:")[1] for p in prompts]
    assert shown[0].startswith("\n[1] Louvre:") and shown[1].startswith("\n[1] Eiffel Tower:")
    assert shown[2].startswith("\n[1] Eiffel Tower:") and "[2] Louvre:" in shown[2]
    assert "[3] Seine:" in shown[2]  # each hop's passages in plan order, then the question's
    assert "- city of the Eiffel Tower: Paris" in prompts[3]  # only the chain arm has notes
    assert "Notes:" not in "".join(prompts[:3])
    assert bench.paired([1.0, 0.0, 1.0], [0.0, 0.0, 1.0]).endswith("1/0")
