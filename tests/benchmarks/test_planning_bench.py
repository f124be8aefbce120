"""``benchmarks/planning.py`` without the model: gold chains read from MuSiQue's steps, 2Wiki's
triples and HotpotQA's supporting titles, and plans judged against them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType

import pytest

from evals.datasets import EvalQuestion, GoldHop
from tests.benchmark_module import load_benchmark
from tests.routed_chat import RoutedChatModel


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("planning")


def musique() -> EvalQuestion:
    hops = [
        GoldHop("Country Man >> performer", "Luke Bryan", "p0", "Country Man"),
        GoldHop("Who is the spouse of #1 ?", "Caroline Boyer", "p1", "Luke Bryan"),
    ]
    return EvalQuestion(
        "2hop__1", "Who is the spouse of the performer of Country Man?", ["Caroline Boyer"], [],
        type="2hop", gold_hops=hops,
    )  # fmt: skip


def test_a_linked_plan_matches_and_an_unlinked_one_does_not(bench: ModuleType) -> None:
    steps = bench.gold_steps(musique())
    assert steps[0].subject == ("country", "man") and steps[0].relation == ("performer",)
    assert steps[1].needs == (0,) and steps[1].subject == ()
    linked = bench.planned_queries(["performer of Country Man", "spouse of #1"])
    verdict = bench.judge(steps, linked)
    assert verdict.chain and verdict.relations and verdict.matched == [0, 1]
    unlinked = bench.planned_queries(["performer of Country Man", "spouse of the performer"])
    assert not bench.judge(steps, unlinked).chain
    wrong_subject = bench.planned_queries(["performer of Luke Bryan", "spouse of #1"])
    assert not bench.judge(steps, wrong_subject).chain
    unasked = bench.planned_queries(["Country Man", "spouse of #1"])
    verdict = bench.judge(steps, unasked)
    assert verdict.chain and not verdict.relations


def test_2wiki_triples_link_through_their_objects(bench: ModuleType) -> None:
    hops = [
        GoldHop("director of The Serpent's Egg", "Ingmar Bergman", "a", "The Serpent's Egg"),
        GoldHop("place of death of Ingmar Bergman", "Fårö", "b", "Ingmar Bergman"),
    ]
    q = EvalQuestion("w1", "Where did the director of film The Serpent's Egg die?", ["Fårö"], [],
                     type="compositional", gold_hops=hops)  # fmt: skip
    steps = bench.gold_steps(q)
    assert steps[1].needs == (0,) and "death" in steps[1].relation
    plan = bench.planned_queries(["director of The Serpent's Egg", "place of death of #1"])
    assert bench.judge(steps, plan).relations


def test_hotpotqa_titles_stand_in_for_hops(bench: ModuleType) -> None:
    q = EvalQuestion(
        "h1", "Which city hosted the first gig of the band that released Tinted Windows?",
        ["Tulsa"], ["Tinted Windows (album)", "Tinted Windows (band)"], type="bridge",
    )  # fmt: skip
    steps = bench.gold_steps(q)
    assert all(not s.needs for s in steps)  # both titles are named by the question
    q2 = EvalQuestion("h2", "Where was the director of Kesselrock born?", ["Trier"],
                      ["Kesselrock", "Anna Weber"], type="bridge")  # fmt: skip
    steps = bench.gold_steps(q2)
    assert steps[1].needs == (bench.ANY_LINK,)
    assert bench.judge(
        steps, bench.planned_queries(["director of Kesselrock", "birthplace of #1"])
    ).chain
    assert not bench.judge(steps, bench.planned_queries(["director of Kesselrock"])).chain


def test_recorded_plans_keep_the_decompose_queries_and_their_links(
    bench: ModuleType, tmp_path: Path
) -> None:
    subs = [
        {"id": "q1", "query": "performer of Country Man", "origin": "decompose", "needs": []},
        {"id": "q2", "query": "spouse of Luke Bryan", "origin": "decompose", "needs": ["q1"]},
        {"id": "q3", "query": "spouse of Luke Bryan?", "origin": "supplement", "needs": []},
    ]
    row = {"id": "2hop__1", "planner": {"sub_queries": subs}}
    (tmp_path / "details.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    plans = bench.recorded_plans(tmp_path)
    assert [(p.text, p.needs) for p in plans["2hop__1"]] == [
        ("performer of Country Man", ()),
        ("spouse of Luke Bryan", (0,)),
    ]
    table = bench.score([musique()], plans)
    assert table["2-hop"] == {"n": 1, "chain": 100.0, "relations": 100.0, "count_ok": 100.0}


def test_rows_recorded_without_query_ids_number_them_by_place(bench: ModuleType) -> None:
    subs = [
        {"query": "performer of Country Man", "origin": "decompose", "needs": []},
        {"query": "Country Man?", "origin": "supplement", "needs": []},
        {"query": "spouse of Luke Bryan", "origin": "decompose", "needs": ["q1"]},
    ]
    recorded = bench.decompose_queries({"id": "2hop__1", "planner": {"sub_queries": subs}})
    assert [s["id"] for s in recorded] == ["q1", "q3"]
    plan = bench.recorded_plan(recorded)
    assert [p.needs for p in plan] == [(), (0,)]
    assert bench.judge(bench.gold_steps(musique()), plan).chain


def live(bench: ModuleType, question: str, *queries: str) -> list:
    chat = RoutedChatModel(routes={"decompose": json.dumps({"queries": list(queries)})})
    return asyncio.run(bench.live_plan(chat, question, asyncio.Semaphore(1)))


def test_a_live_plan_goes_through_the_decompose_node_s_rules(bench: ModuleType) -> None:
    question = musique().question
    plan = live(bench, question, "performer of Country Man", "spouse of #1")
    assert [(p.text, p.needs) for p in plan] == [
        ("performer of Country Man", ()),
        ("spouse of #1", (0,)),
    ]
    assert bench.judge(bench.gold_steps(musique()), plan).relations
    # a bridge no later query builds on: the residual last hop asks the question over it
    atlas = "Where did the author of The Lantern Atlas think Venus was in relation to the sun?"
    plan = live(bench, atlas, "author of The Lantern Atlas", "Venus")
    assert [(p.text, p.needs) for p in plan][-1] == (
        "Where did the #1 think Venus was in relation to the sun?",
        (0,),
    )
    # nothing kept (a failed call, or only copies): the question itself is searched
    assert [p.text for p in live(bench, question)] == [question]
