"""A scripted chat model that picks its reply by which prompt it was sent, not by call order.

The planner runs searches and summaries in parallel, so the order of calls is not fixed; routing
by the prompt's kind keeps control-flow tests deterministic. It is not a language model: each
route returns what the test scripted (a string, or a function of the messages), and every call is
recorded with its route.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

import prompts
from tests.scripted_chat import ScriptedChatModel

# the template a prompt was rendered from -> the route name tests script replies under
ROUTES = {
    "decompose": "decompose",
    "findings": "summarize",
    "verify": "verify",
    "answer": "answer",
    "searcher_extract": "extract",
    "searcher_verify": "judge",
    "sparse_rewrite": "rewrite",
    "hyde": "hyde",
    "rag_answer": "rag_answer",
    "free_answer": "rag_answer",  # the same reader, replying in free text (``answer_reader``)
    "closed_book": "closed_book",
    "tree_summary": "tree_summary",
}

Route = str | Callable[[list[BaseMessage]], str]


def route_of(messages: list[BaseMessage]) -> str:
    """The route of a prompt: its template, recognised as the load test's stub recognises it
    (``prompts.template_of``), under the name the tests script."""
    system = str(messages[0].content) if messages else ""
    name = prompts.template_of(system)
    if name not in ROUTES:
        raise AssertionError(f"no route for prompt: {system[:80]!r}")
    return ROUTES[name]


class RoutedChatModel(ScriptedChatModel):
    routes: dict[str, Route] = Field(default_factory=dict)
    seen: list[tuple[str, str]] = Field(default_factory=list)  # (route, user message)
    fail: set[str] = Field(default_factory=set)  # routes that raise, like a dead endpoint
    slow: set[str] = Field(default_factory=set)  # routes that time out, like a queued model

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Sequence[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        name = route_of(messages)
        self.seen.append((name, str(messages[-1].content)))
        if name in self.fail:
            raise ConnectionError(f"scripted failure of the {name} call")
        if name in self.slow:
            raise TimeoutError(f"scripted: no reply to the {name} call in time")
        if name not in self.routes:
            raise AssertionError(f"the test scripted no reply for {name!r}")
        reply = self.routes[name]
        return self.result(reply(messages) if callable(reply) else reply)

    def count(self, route: str) -> int:
        return sum(1 for name, _ in self.seen if name == route)
