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
PLANNER_DENSE = {**STANDALONE_DENSE, "max_rewrites": 0, "original_first": True}
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
    """``hoptree search`` (``agent.searching.searcher_context``), the evals and the searcher
    study build a search's budget in one place, ``Settings.search_budget()``."""
    budget = settings.search_budget()
    assert (budget.max_llm_calls, budget.deadline_s, budget.llm_timeout_s) == STANDALONE_BUDGET


def test_a_plugin_gets_the_planners_loop_through_its_context(settings: Settings) -> None:
    """The channel the built-ins narrow through is the one a plugin reads: its factory gets
    the planner's loop in ``context.loop`` and a budget of the loop's calls, its own options
    untouched; built alone (``hoptree search``) it gets no loop and the stand-alone budget."""
    from agent.searching import searcher_options
    from searchers.registry import SearcherContext, SearcherSpec
    from searchers.searcher import SearchLoop, SearchResult

    class TitleSearcher:
        name, description = "title", "a plugin"

        async def search(self, query: str, *, k: int = 10) -> SearchResult:
            raise AssertionError("only built here")

    seen: list[SearcherContext] = []

    def factory(context: SearcherContext) -> TitleSearcher:
        seen.append(context)
        return TitleSearcher()

    registry = default_registry(plugins=False)
    registry.register(SearcherSpec("title", "a plugin", factory))
    options = {**searcher_options(settings), "title": {"fields": ["title"]}}
    context = SearcherContext(
        chat=RoutedChatModel(), budget=settings.search_budget(), options=options
    )
    build_agent(settings, context, ["title"], registry=registry)
    registry.create("title", context)
    planned, alone = seen
    assert planned.loop == SearchLoop(
        max_llm_calls=1, max_depth=1, max_refinements=1, max_rewrites=0
    )
    assert (planned.budget.max_llm_calls, planned.budget.deadline_s) == PLANNER_BUDGET[:2]
    assert planned.options_for("title") == {"fields": ["title"]}
    assert alone.loop is None and alone.budget.max_llm_calls == STANDALONE_BUDGET[0]


def test_the_planners_loop_and_a_searchers_own_table_are_set_apart(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, eval_context: EvalContext, corpus: Corpus
) -> None:
    """``HOPTREE_PLANNER__SEARCH_*`` narrows the planner's searches; a searcher's own table
    (``HOPTREE_SEARCHERS__SPARSE__*``, and the flat names of earlier releases) sets what the
    planner does not narrow, and the stand-alone loop."""
    from agent.settings import load_settings

    monkeypatch.setenv("HOPTREE_PLANNER__SEARCH__MAX_DEPTH", "2")
    monkeypatch.setenv("HOPTREE_PLANNER__SEARCH__MAX_REWRITES", "2")
    monkeypatch.setenv("HOPTREE_SEARCHERS__SPARSE__ORIGINAL_FIRST", "false")
    monkeypatch.setenv("HOPTREE_SEARCHERS__SPARSE_MAX_REFINEMENTS", "9")
    loaded = load_settings(data_dir=settings.data_dir)
    context = EvalContext(
        chat=eval_context.chat,
        settings=loaded,
        embeddings=eval_context.embeddings,
        registry=eval_context.registry,
    ).searcher_context(corpus)
    agent = build_agent(loaded, context, ["sparse", "dense"], registry=eval_context.registry)
    sparse, dense = agent.searchers["sparse"].config, agent.searchers["dense"].config
    assert (sparse.max_depth, sparse.max_refinements, sparse.original_first) == (2, 1, False)
    assert (dense.max_rewrites, dense.original_first) == (2, True)
    alone = eval_context.registry.create("sparse", context).config
    assert (alone.max_depth, alone.max_refinements, alone.original_first) == (3, 9, False)


def test_the_question_limits_every_surface_reads(settings: Settings) -> None:
    """One deadline and one question length, read by the planner, the HTTP server and MCP."""
    from agent.serve.mcp_backend import McpBackend

    assert (settings.budgets.deadline_s, settings.server.request_deadline_s) == (900.0, 900.0)
    assert settings.server.max_question_chars == 2000
    defaults = {f.name: f.default for f in McpBackend.__dataclass_fields__.values()}
    assert (defaults["deadline_s"], defaults["search_timeout_s"]) == (900.0, 300.0)
    assert defaults["max_question_chars"] == 2000
