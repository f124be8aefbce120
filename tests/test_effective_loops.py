"""The loop limits and budgets the searchers actually run with, pinned to literal values.

The values were read from the code at 9441faf, before the searchers' loop settings moved into one
config class beside each searcher and the planner began narrowing them through the searcher
context: the planner's searchers, the stand-alone ones (``hoptree search`` and the
single-searcher eval pipelines) and the eval pipelines' planner must keep running exactly these
loops, or a replay of an LLM cache filled before the move would miss. The tests read only what
a built searcher holds (its ``config`` and ``budget``), so the same file passes on both sides of
the move.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.hoptree_agent import HoptreeAgent, build_agent
from agent.settings import Settings
from evals.corpora import Corpus
from evals.pipelines import EvalContext, planner_agent, planner_settings
from searchers.registry import default_registry
from tests.routed_chat import RoutedChatModel

# (max_llm_calls, deadline_s, llm_timeout_s) of one search
STANDALONE_BUDGET = (30, 300.0, 180.0)
PLANNER_BUDGET = (1, 300.0, 180.0)
RULE = ("coverage", 0.6)
STANDALONE_SPARSE = {
    "k": 10,
    "max_depth": 3,
    "max_refinements": 27,
    "original_first": True,
    "verify_top": 5,
    "feedback_top": 3,
    "passage_chars": 300,
}
PLANNER_SPARSE = {**STANDALONE_SPARSE, "max_depth": 1, "max_refinements": 1}
STANDALONE_DENSE = {
    "k": 10,
    "max_rewrites": 3,
    "original_first": False,
    "verify_top": 5,
    "feedback_top": 3,
    "passage_chars": 300,
    "pseudo_max_tokens": 256,
}
PLANNER_DENSE = {**STANDALONE_DENSE, "max_rewrites": 1, "original_first": True}
# the question's own budget (BudgetSettings) and the planner's text sizes
QUESTION_BUDGETS = {"max_rounds": 3, "max_sub_queries": 8, "max_llm_calls": 12, "deadline_s": 900.0}


class _Retriever:
    """A stand-in retriever: building a searcher only keeps it."""

    name = "stand-in"


def _values(config: Any, fields: dict[str, Any]) -> dict[str, Any]:
    return {name: getattr(config, name) for name in fields}


def _budget(searcher: Any) -> tuple[int, float, float]:
    budget = searcher.budget
    return (budget.max_llm_calls, budget.deadline_s, budget.llm_timeout_s)


def _rule(config: Any) -> tuple[str, float]:
    return (config.rule.kind, config.rule.min_coverage)


def _assert_planner_searchers(agent: HoptreeAgent) -> None:
    sparse, dense = agent.searchers["sparse"], agent.searchers["dense"]
    assert _values(sparse.config, PLANNER_SPARSE) == PLANNER_SPARSE
    assert _values(dense.config, PLANNER_DENSE) == PLANNER_DENSE
    assert _rule(sparse.config) == _rule(dense.config) == RULE
    assert _budget(sparse) == _budget(dense) == PLANNER_BUDGET
    assert {name: getattr(agent.budgets, name) for name in QUESTION_BUDGETS} == QUESTION_BUDGETS
    assert agent.llm_timeout_s == 180.0


@pytest.fixture
def eval_context(settings: Settings) -> EvalContext:
    return EvalContext(
        chat=RoutedChatModel(),
        settings=settings,
        embeddings=object(),  # type: ignore[arg-type]
        registry=default_registry(plugins=False),
    )


@pytest.fixture
def corpus() -> Corpus:
    return Corpus(name="stand-in", retrievers={"sparse": _Retriever(), "dense": _Retriever()})


def test_the_planners_searchers_run_the_lighter_loop(
    settings: Settings, eval_context: EvalContext, corpus: Corpus
) -> None:
    """``build_agent`` (the CLI, the servers, Studio) gives the planner's searchers one call,
    one feedback level, one refinement and one pseudo-document per search."""
    context = eval_context.searcher_context(corpus)
    agent = build_agent(
        settings, context, ["sparse", "dense"], registry=default_registry(plugins=False)
    )
    _assert_planner_searchers(agent)


@pytest.mark.parametrize(
    "switches", [{}, {"decompose": False}, {"summarize": False}, {"supplement": False}]
)
def test_the_eval_planner_pipelines_run_the_same_loops(
    eval_context: EvalContext, corpus: Corpus, switches: dict[str, bool]
) -> None:
    """``full`` and its ablations build the planner the way ``build_agent`` does."""
    planner = planner_settings(eval_context, ("sparse", "dense"), **switches)
    agent = planner_agent(eval_context, corpus, ("sparse", "dense"), planner)
    _assert_planner_searchers(agent)
    assert (planner.k, planner.passage_chars, planner.summary_passages) == (10, 350, 3)
    assert planner.answer_sources == 5


@pytest.mark.parametrize(
    ("name", "expected"), [("sparse", STANDALONE_SPARSE), ("dense", STANDALONE_DENSE)]
)
def test_the_standalone_searchers_run_their_own_loops(
    eval_context: EvalContext, corpus: Corpus, name: str, expected: dict[str, Any]
) -> None:
    """``sparse-searcher`` and ``dense-searcher`` (and ``hoptree search``) run LevelRAG's loop
    sizes: the searcher as configured, under the stand-alone budget."""
    context = eval_context.searcher_context(corpus)
    assert (context.budget.max_llm_calls, context.budget.deadline_s) == STANDALONE_BUDGET[:2]
    assert context.budget.llm_timeout_s == STANDALONE_BUDGET[2]
    searcher = eval_context.registry.create(name, context)
    assert _values(searcher.config, expected) == expected
    assert _rule(searcher.config) == RULE
    assert _budget(searcher) == STANDALONE_BUDGET


def test_hoptree_search_gets_the_standalone_budget(settings: Settings) -> None:
    """``hoptree search`` and the searcher study build their budget from the settings
    (``agent.searching.search_budget``) as the evals do."""
    from types import SimpleNamespace

    from agent.searching import search_budget

    budget = search_budget(SimpleNamespace(settings=settings))  # type: ignore[arg-type]
    assert (budget.max_llm_calls, budget.deadline_s, budget.llm_timeout_s) == STANDALONE_BUDGET
