"""The planner graph for LangGraph Studio and ``langgraph dev``: ``langgraph.json`` names
``make_graph`` here.

The planner's nodes read their models and searchers from a per-run ``PlannerRun`` context, an
object no JSON run request can carry. So the graph Studio gets is a one-node wrapper whose node
opens the configured index and searchers, builds that context and invokes the planner graph
itself as a subgraph (with the run's own config, so Studio draws and streams the planner's
nodes: decompose, one search node per searcher, findings, verify, answer).

What to open comes from the run, not from globals: ``index_dir`` and ``searchers`` in the run's
``configurable`` (Studio's assistant configuration) or in its ``context`` (``StudioContext``),
then the settings (``HOPTREE_*``, ``hoptree.toml``), whose defaults work on a fresh machine.
The factory checks the searcher names and the configured index's manifest (a wrong name or
path fails at once and says which); the models are started by the first run and kept for the
next ones with the same configuration, because a graph factory is called for every run and for
every drawing of the graph. Studio draws the wrapper as one node (the planner's fan-out is
dynamic, ``Send`` and ``Command``, so LangGraph cannot inline its drawing) and streams the
planner's steps as ``planner:...`` subgraph events.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from agent.hoptree_agent import backstop_s
from agent.planner.graph import build_planner_graph, recursion_limit
from agent.planner.state import fresh_question
from agent.results import degradation, degraded_note
from agent.rules.question import Question, clean_question
from agent.settings import Settings, comma_separated, load_settings

GRAPH_NAME = "hoptree"
OPEN_MARGIN_S = 120.0  # loading the embedding model and opening the index, past model startup


@dataclass
class StudioContext:
    """What a Studio user (or an API caller) may set per run; empty = the settings'. The
    searchers are chosen in the configurable instead: they are the graph's nodes, so they must
    be known when the graph is built."""

    index_dir: str = ""  # an index directory (hoptree index build ... --index DIR)


class StudioInput(TypedDict):
    question: str


class StudioState(TypedDict, total=False):
    question: str
    short_answer: str
    answer: str
    citations: list[dict[str, Any]]
    sub_queries: list[dict[str, Any]]
    stopped: str
    llm_calls: int
    degraded: bool
    degraded_reasons: list[str]
    seconds: float


@dataclass(frozen=True)
class StudioOptions:
    """The resolved choices: the settings plus which index and which searchers."""

    settings: Settings
    index_dir: Path
    searchers: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.settings.model_dump_json()}|{self.index_dir}|{','.join(self.searchers)}"


def _values(source: Any) -> Mapping[str, Any]:
    if source is None:
        return {}
    if is_dataclass(source) and not isinstance(source, type):
        return asdict(source)
    return source if isinstance(source, Mapping) else {}


def studio_options(config: RunnableConfig | None, context: Any = None) -> StudioOptions:
    """``index_dir`` from the run's context, else its configurable, else the settings;
    ``searchers`` from the configurable, else the settings (the tree joins sparse and dense
    when the settings leave them unset and the index has one)."""
    from agent.searching import planner_searchers

    settings = load_settings()
    configurable = _values((config or {}).get("configurable"))
    index_dir = _values(context).get("index_dir") or configurable.get("index_dir")
    index = Path(index_dir or settings.default_index_dir).expanduser()
    names = comma_separated(configurable.get("searchers")) or planner_searchers(settings, index)
    return StudioOptions(settings, index, tuple(names))


@dataclass
class OpenedPlanner:
    """Models and the planner agent over one index, kept for the runs that ask for the same."""

    runtime: Any  # agent.runtime.runtime.Runtime
    agent: Any  # agent.hoptree_agent.HoptreeAgent


class _OpenPlanners:
    """One opened planner per configuration for the life of the server process: the embedded
    model starts once, not once per run. Closed at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, OpenedPlanner] = {}
        atexit.register(self.close)

    def get(self, options: StudioOptions) -> OpenedPlanner:
        from agent.hoptree_agent import build_agent
        from agent.runtime.runtime import Runtime
        from agent.searching import searcher_context
        from searchers.registry import default_registry

        with self._lock:
            if options.key not in self._open:
                registry = default_registry()
                specs = [registry.get(name) for name in options.searchers]
                needs = sorted({r for spec in specs for r in spec.requires})
                runtime = Runtime(options.settings)
                try:
                    agent = build_agent(
                        options.settings,
                        searcher_context(runtime, options.index_dir, needs),
                        options.searchers,
                        model_label=f"hoptree ({runtime.chat.label})",
                        registry=registry,
                    )
                except BaseException:
                    runtime.close()
                    raise
                self._open[options.key] = OpenedPlanner(runtime, agent)
            return self._open[options.key]

    def close(self) -> None:
        with self._lock:
            for opened in self._open.values():
                opened.runtime.close()
            self._open.clear()


OPEN_PLANNERS = _OpenPlanners()


def _sub_queries(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    findings = state.get("findings") or {}
    return [
        {
            "id": qid,
            "query": sub["query"],
            "round": sub["round"],
            "finding": (findings.get(qid) or {}).get("finding", ""),
        }
        for qid, sub in (state.get("sub_queries") or {}).items()
    ]


def make_graph(config: RunnableConfig | None = None) -> Any:
    """The graph ``langgraph.json`` names: the planner over the configured index and
    searchers, as the ``planner`` subgraph of a one-node wrapper (see the module's doc)."""
    from searchers.index_dir import IndexDir
    from searchers.registry import default_registry

    options = studio_options(config)
    registry = default_registry()
    for name in options.searchers:
        registry.get(name)  # an unknown name fails here, with the known ones listed
    if _values((config or {}).get("configurable")).get("index_dir"):
        IndexDir.open(options.index_dir)  # a configured index that is missing fails here
    planner = build_planner_graph(list(options.searchers))

    async def run_planner(
        state: StudioState, config: RunnableConfig, runtime: Runtime[StudioContext]
    ) -> dict[str, Any]:
        chosen = studio_options(config, runtime.context)
        settings = chosen.settings
        # opening may start the embedded model (bounded by its own startup timeout)
        async with asyncio.timeout(settings.llm.startup_timeout_s + OPEN_MARGIN_S):
            opened = await asyncio.to_thread(OPEN_PLANNERS.get, chosen)
        question = clean_question(
            state.get("question", ""), max_chars=settings.server.max_question_chars
        )
        run = opened.agent.new_run()
        started = time.monotonic()
        # the nodes stop themselves at the deadline; this is the backstop, as in HoptreeAgent
        async with asyncio.timeout(backstop_s(settings.budgets.deadline_s, settings.llm.timeout_s)):
            final = await planner.ainvoke(
                fresh_question(Question.read(question), None),
                {"recursion_limit": recursion_limit(settings.budgets.max_rounds)},
                context=run,
            )
        reasons = degradation(list(final.get("errors") or []), final.get("stopped", ""))
        answer = final.get("answer", "")
        return {
            "short_answer": final.get("short_answer", ""),
            "answer": f"{answer}\n\n{degraded_note(reasons)}".strip() if reasons else answer,
            "citations": list(final.get("citations") or []),
            "sub_queries": _sub_queries(final),
            "stopped": final.get("stopped", ""),
            "llm_calls": run.scope.llm_calls,
            "degraded": bool(reasons),
            "degraded_reasons": reasons,
            "seconds": round(time.monotonic() - started, 2),
        }

    graph = StateGraph(StudioState, input_schema=StudioInput, context_schema=StudioContext)
    graph.add_node("planner", run_planner)
    graph.add_edge(START, "planner")
    graph.add_edge("planner", END)
    return graph.compile(name=GRAPH_NAME)
