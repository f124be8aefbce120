"""The planner as a Python API: build it from settings, ``await agent.ask(question)``.

One ``HoptreeAgent`` serves many questions (concurrently too): the chat model, the searchers and
the compiled graphs are built once; each question gets its own usage tracker, run scope and
trace. Threads (follow-up questions that refer to earlier ones) live in a LangGraph checkpointer;
without a thread id a question runs on the graph compiled without one and leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from agent.planner.answer import AgentRunError
from agent.planner.graph import build_planner_graph, recursion_limit
from agent.planner.plan import Plan
from agent.planner.state import PlannerRun, PlannerState, fresh_question
from agent.results import (
    AskResult,
    Citation,
    Draft,
    PlanStop,
    TraceEvent,
    answered_stop,
    degradation,
    degraded_note,
)
from agent.rules.question import MAX_QUESTION_CHARS, Question, clean_question
from agent.runtime.usage import UsageTracker
from agent.service import AgentError
from agent.settings import BudgetSettings, PlannerSettings, Settings
from searchers.registry import SearcherContext, SearcherRegistry, default_registry
from searchers.searcher import DEFAULT_LLM_TIMEOUT_S, Searcher

if TYPE_CHECKING:
    from agent.runtime.runtime import Runtime

_DONE = object()
# The backstop around a whole question, past its deadline and the answer call's own LLM timeout
# (an answer started at the deadline still gets a full call: ``PlannerRun.answer_scope``): room
# for the no-call checks after it and for cancellation to land. Set with the first planner
# (1c35812) with no measurement behind it; the nodes stop themselves long before it fires.
BACKSTOP_MARGIN_S = 30.0


def backstop_s(deadline_s: float, llm_timeout_s: float) -> float:
    """How long a question may run before it is cut off as hung (``BACKSTOP_MARGIN_S``)."""
    return deadline_s + llm_timeout_s + BACKSTOP_MARGIN_S


class HoptreeAgent:
    """Satisfies ``agent.service.AgentLike``."""

    def __init__(
        self,
        chat: BaseChatModel,
        searchers: Mapping[str, Searcher],
        *,
        planner: PlannerSettings | None = None,
        budgets: BudgetSettings | None = None,
        llm_timeout_s: float = DEFAULT_LLM_TIMEOUT_S,
        max_question_chars: int = MAX_QUESTION_CHARS,
        model_label: str = "hoptree",
        checkpointer: Any = None,
    ) -> None:
        if not searchers:
            raise AgentError("the planner needs at least one searcher")
        self.chat = chat
        self.searchers = dict(searchers)
        self.planner = planner or PlannerSettings()
        self.budgets = budgets or BudgetSettings()
        self.llm_timeout_s = llm_timeout_s
        self.max_question_chars = max_question_chars
        self.model_label = model_label
        self.checkpointer = checkpointer
        names = list(self.searchers)
        self._graph = build_planner_graph(names)
        self._threaded = build_planner_graph(names, checkpointer) if checkpointer else None

    @property
    def searcher_names(self) -> list[str]:
        return list(self.searchers)

    # ------------------------------------------------------------------ runs

    async def ask(
        self,
        question: str,
        *,
        thread_id: str | None = None,
        deadline_s: float | None = None,
        on_event: Callable[[TraceEvent], None] | None = None,
    ) -> AskResult:
        """The result; ``on_event`` sees every trace event as it happens (the CLI's live
        lines). A fatal error raises ``AgentError``."""
        async for item in self.run(question, thread_id=thread_id, deadline_s=deadline_s):
            if isinstance(item, AskResult):
                return item
            if item.kind == "error" and item.data.get("fatal"):
                raise AgentError(item.data["error"])
            if on_event is not None:
                on_event(item)
        raise AgentError("the run ended without a result")  # pragma: no cover

    async def stream(
        self, question: str, *, thread_id: str | None = None, deadline_s: float | None = None
    ) -> AsyncIterator[TraceEvent]:
        """Trace events as they happen, then ``result`` (data: the result's JSON) or a fatal
        ``error``. Closing the iterator early cancels the run."""
        async for item in self.run(question, thread_id=thread_id, deadline_s=deadline_s):
            if isinstance(item, AskResult):
                yield TraceEvent(kind="result", data=item.to_json(with_trace=False))
            else:
                yield item

    def new_run(self, deadline_s: float | None = None) -> PlannerRun:
        """The scope of one question: this agent's model, searchers and settings, its own
        usage tracker, and the deadline (the caller's, never past the budgets')."""
        return PlannerRun(
            chat=self.chat,
            searchers=self.searchers,
            planner=self.planner,
            budgets=self.budgets,
            tracker=UsageTracker(),
            llm_timeout_s=self.llm_timeout_s,
            deadline_s=min(deadline_s or self.budgets.deadline_s, self.budgets.deadline_s),
        )

    async def run(
        self, question: str, *, thread_id: str | None = None, deadline_s: float | None = None
    ) -> AsyncIterator[TraceEvent | AskResult]:
        """Trace events, then the ``AskResult`` itself (or a fatal ``error`` event): for
        in-process callers that want both the live trace and the typed result."""
        text = clean_question(question, max_chars=self.max_question_chars)
        asked = Question.read(text)  # the one reading of its words; every step reads this
        run = self.new_run(deadline_s)
        deadline, tracker = run.deadline_s, run.tracker
        graph = self._graph
        config: dict[str, Any] = {
            "recursion_limit": recursion_limit(self.budgets.max_rounds),
            "callbacks": [tracker],
        }
        if thread_id is not None:
            if self._threaded is None:
                raise AgentError("this agent keeps no threads (no checkpointer configured)")
            graph = self._threaded
            config["configurable"] = {"thread_id": thread_id}
        queue: asyncio.Queue[Any] = asyncio.Queue()
        started = time.monotonic()

        async def drive() -> PlannerState:
            final: dict[str, Any] = {}
            async for mode, chunk in graph.astream(
                fresh_question(asked, thread_id),
                config=config,
                context=run,
                stream_mode=["custom", "values"],
            ):
                if mode == "custom" and isinstance(chunk, dict) and "hoptree_event" in chunk:
                    await queue.put(chunk["hoptree_event"])
                elif mode == "values":
                    final = chunk
            return final  # type: ignore[return-value]

        async def guarded() -> None:
            try:
                # The nodes stop themselves at the deadline; this is the backstop for a step
                # that hangs anyway (the answer step gets its LLM timeout on top).
                async with asyncio.timeout(backstop_s(deadline, self.llm_timeout_s)):
                    state = await drive()
                await queue.put(("state", state))
            except AgentRunError as exc:
                await queue.put(("fatal", str(exc)))
            except TimeoutError:
                await queue.put(("fatal", f"the question ran past its {deadline:.0f}s deadline"))
            except Exception as exc:
                await queue.put(("fatal", f"{type(exc).__name__}: {str(exc)[:500]}"))
            finally:
                await queue.put(_DONE)

        task = asyncio.create_task(guarded())
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                if isinstance(item, TraceEvent):
                    yield item
                elif item[0] == "fatal":
                    event = TraceEvent(kind="error", data={"error": item[1], "fatal": True})
                    run.events.append(event)
                    yield event
                else:
                    yield self._result(text, item[1], run, time.monotonic() - started)
        finally:
            if not task.done():
                # One cancel, then wait without awaiting the task itself: under anyio's
                # level-triggered cancellation (the MCP SDK, Starlette) the caller is cancelled
                # again at every await, and ``await task`` passed each of those on to the
                # task, cutting LangGraph's own clean-up short and leaving searches running.
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({task})

    def _result(
        self, question: str, state: Mapping[str, Any], run: PlannerRun, seconds: float
    ) -> AskResult:
        total = run.tracker.total()
        draft = Draft.from_state(state)
        errors = list(state.get("errors", []))
        # the answer step (or the draft that stood) set it: the graph ends nowhere else
        stopped: PlanStop = answered_stop(state.get("stopped", ""))
        reasons = degradation(errors, stopped)
        answer = state.get("answer", "")
        if reasons:
            answer = f"{answer}\n\n{degraded_note(reasons)}".strip()
        return AskResult(
            question=question,
            answer=answer,
            short_answer=state.get("short_answer", ""),
            citations=[Citation.from_json(c) for c in state.get("citations", [])],
            sub_queries=Plan.from_json(state).reports(),
            verdicts=list(state.get("verdicts", [])),
            stopped=stopped,
            llm_calls=run.scope.llm_calls,
            prompt_tokens=total.prompt_tokens,
            completion_tokens=total.completion_tokens,
            seconds=seconds,
            thread_id=state.get("thread_id"),
            trace=list(run.events),
            errors=errors,
            sources=list(state.get("sources", [])),
            llm_cache_hits=total.cache_hits,
            cache_hit_prompt_tokens=total.cache_hit_prompt_tokens,
            cache_hit_completion_tokens=total.cache_hit_completion_tokens,
            citation_check=dict(state.get("citation_check") or {}),
            degraded=bool(reasons),
            degraded_reasons=reasons,
            searchers=list(run.searchers),
            usage_by_step=run.tracker.by_step_json(),
            draft=draft,
            final_choice=dict(state.get("final_choice") or {}) or None,
            first_answer_s=seconds if draft is None else min(seconds, draft.seconds or seconds),
        )


def build_agent(
    settings: Settings,
    context: SearcherContext,
    names: Sequence[str],
    *,
    planner: PlannerSettings | None = None,
    checkpointer: Any = None,
    model_label: str = "hoptree",
    registry: SearcherRegistry | None = None,
) -> HoptreeAgent:
    """The one place a planner agent is assembled: the searchers ``names`` built by the
    registry over ``context`` narrowed to the planner's lighter loop (``SearcherContext.within``
    with ``PlannerSettings.search_loop()``: the same channel for built-in and plugin searchers),
    and the settings' budgets, timeouts and question limit. The CLI, the HTTP and MCP servers
    (through ``open_agent``), LangGraph Studio, the evaluation pipelines and the load benchmark
    all call it, so a setting read here is read everywhere."""
    registry = registry or default_registry()
    planner = planner or settings.planner
    context = context.within(planner.search_loop())
    built = {name: registry.create(name, context) for name in names}
    return HoptreeAgent(
        context.chat,
        built,
        planner=planner,
        budgets=settings.budgets,
        llm_timeout_s=settings.llm.timeout_s,
        max_question_chars=settings.server.max_question_chars,
        model_label=model_label,
        checkpointer=checkpointer,
    )


@contextlib.asynccontextmanager
async def open_agent(
    settings: Settings,
    index_dir: Path,
    *,
    searchers: list[str] | None = None,
    threads: bool = False,
    progress: Any = None,
    runtime: Runtime | None = None,
) -> AsyncIterator[HoptreeAgent]:
    """The composition root for the planner: models, searchers over ``index_dir``, and (with
    ``threads``) the SQLite checkpointer; everything is closed on exit. A caller that builds
    more over the same models (``hoptree mcp``: stand-alone searchers, raw retrievers) passes
    its own ``agent.runtime.runtime.Runtime`` and closes it itself: one chat model, one embedded
    server."""
    from agent.runtime.runtime import Runtime
    from agent.searching import planner_searchers, searcher_context

    registry = default_registry()
    names = searchers or planner_searchers(settings, index_dir)
    specs = [registry.get(name) for name in names]  # unknown names fail before any model starts
    needs = sorted({r for spec in specs for r in spec.requires})
    owned = runtime is None
    if runtime is None:
        runtime = Runtime(settings, progress=progress)
    try:
        context = searcher_context(runtime, index_dir, needs)
        async with contextlib.AsyncExitStack() as stack:
            checkpointer = None
            if threads:
                from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

                settings.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
                checkpointer = await stack.enter_async_context(
                    AsyncSqliteSaver.from_conn_string(str(settings.checkpoint_path))
                )
            yield build_agent(
                settings,
                context,
                names,
                checkpointer=checkpointer,
                model_label=f"hoptree ({runtime.chat.label})",
                registry=registry,
            )
    finally:
        if owned:
            runtime.close()
