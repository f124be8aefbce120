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

from tests.scripted_chat import ScriptedChatModel

# a phrase of each prompt's system text -> route name
ROUTES = {
    "Split the user's question": "decompose",
    "You read search results for several search queries": "summarize",
    "You plan the next searches": "verify",
    "Answer the question from the numbered passages": "answer",
    "You read search results": "extract",
    "You judge search results": "judge",
    "You write keyword queries": "rewrite",
    "encyclopedia-style passage": "hyde",
    "You answer questions from numbered passages": "rag_answer",
    "Answer the question from your own knowledge": "closed_book",
}

Route = str | Callable[[list[BaseMessage]], str]


def route_of(messages: list[BaseMessage]) -> str:
    system = str(messages[0].content) if messages else ""
    for phrase, name in ROUTES.items():
        if phrase in system:
            return name
    raise AssertionError(f"no route for prompt: {system[:80]!r}")


class RoutedChatModel(ScriptedChatModel):
    routes: dict[str, Route] = Field(default_factory=dict)
    seen: list[tuple[str, str]] = Field(default_factory=list)  # (route, user message)
    fail: set[str] = Field(default_factory=set)  # routes that raise, like a dead endpoint

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
        if name not in self.routes:
            raise AssertionError(f"the test scripted no reply for {name!r}")
        reply = self.routes[name]
        return self.result(reply(messages) if callable(reply) else reply)

    def count(self, route: str) -> int:
        return sum(1 for name, _ in self.seen if name == route)
