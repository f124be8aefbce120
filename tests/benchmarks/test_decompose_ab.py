"""``benchmarks/decompose_ab.py`` without the model: plans come from a scripted chat model, go
through the decompose node's rules, and are scored by the shape of their chain; a variant
folder of prompt files is laid over the project's and the project's come back after."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType

import pytest

import prompts
from evals.datasets import EvalQuestion, GoldHop
from tests.benchmark_module import load_benchmark
from tests.routed_chat import RoutedChatModel


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("decompose_ab")


def musique(question: str, hops: int) -> EvalQuestion:
    gold = [GoldHop(f"step {n}", f"answer {n}", f"p{n}", f"T{n}") for n in range(hops)]
    return EvalQuestion("m1", question, ["answer"], [], gold_hops=gold)


def plan(bench: ModuleType, question: EvalQuestion, dataset: str, *queries: str):
    chat = RoutedChatModel(routes={"decompose": json.dumps({"queries": list(queries)})})
    item = bench.Plan(question, dataset)
    asyncio.run(bench.plan_one(chat, item, asyncio.Semaphore(1)))
    return item


def test_a_chain_is_scored_by_its_links_and_its_hops(bench: ModuleType) -> None:
    question = musique("Who is the spouse of the performer of Country Man?", 2)
    linked = plan(bench, question, "musique", "performer of Country Man", "spouse of #1")
    assert linked.queries == ["performer of Country Man", "spouse of #1"]
    assert linked.depth == 2 == linked.gold_depth and linked.gold_hops == 2
    loose = plan(bench, question, "musique", "performer of Country Man", "spouse")
    assert loose.depth == 1  # "spouse" names nothing and links nothing
    counts = bench.score([linked, loose])
    assert counts["depth_ok"] == 1 and counts["depth_known"] == 2 and counts["hops_ok"] == 1


def test_fragments_and_comparisons_are_counted(bench: ModuleType) -> None:
    question = EvalQuestion("h1", "Which river flows next to the town where Kesselrock began?",
                            ["Moselle"], [], type="bridge")  # fmt: skip
    item = plan(
        bench, question, "hotpotqa", "town where Kesselrock began", "river that flows next to"
    )
    counts = bench.score([item])
    assert counts["nameless"] == 1 and counts["depth_ok"] == 0 and counts["depth_known"] == 1
    compare = EvalQuestion("c1", "Which film came out first, Glass Harbor or Dune Lights?",
                           ["Glass Harbor"], [], type="comparison")  # fmt: skip
    both = plan(
        bench, compare, "2wiki", "release date of Glass Harbor", "release date of Dune Lights"
    )
    one = plan(bench, compare, "2wiki", "release date of Glass Harbor")
    counts = bench.score([both, one])
    assert counts["alternatives"] == 1 and counts["comparisons"] == 2
    assert counts["depth_ok"] == 2  # a comparison's chain is one query deep


def test_a_variant_folder_replaces_prompt_files_until_the_project_s_come_back(
    bench: ModuleType, tmp_path: Path
) -> None:
    home = prompts.PROMPT_DIR
    variant = tmp_path / "variant"
    variant.mkdir()
    system = "[system]\nPlan it. At most {max_queries}.\n{examples}\n"
    system += "[user]\n{conversation}Q: {question}\n"
    (variant / "decompose.txt").write_text(system, encoding="utf-8")
    laid = tmp_path / "laid"
    laid.mkdir()
    try:
        bench.use_prompts(bench.overlay(variant, laid))
        rendered = prompts.render(
            "decompose", question="Q?", max_queries=3, examples="", conversation=""
        )
        assert rendered[0].content.startswith("Plan it. At most 3.")
        assert prompts.example_bank("plan_examples")  # the project's other files are there
    finally:
        bench.use_prompts(home)
    assert not prompts.render("decompose", question="Q?", max_queries=3, examples="",
                              conversation="")[0].content.startswith("Plan it")  # fmt: skip
    (variant / "no_such_prompt.txt").write_text("x", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"no_such_prompt\.txt"):
        bench.overlay(variant, laid)
