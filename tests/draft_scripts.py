"""What the surface tests of draft first share (HTTP stream, chat endpoint, page, MCP, CLI): the
real planner with the draft on over a real tantivy index, the routed two-hop script, and a gate
that holds the plan's first call until the test has seen the draft. With the gate a test proves
the draft reached the client while the run was unfinished, with no timing involved. Not a test
module.

The three runs every surface is checked on (the router's ``fitted`` policy, the product's):

- ``replaced``: the chain question, the draft answers the bridge "Paris", the plan resolves the
  chain to "the Seine" and replaces it ("supported chain over one read");
- ``confirmed``: the chain question, the draft says "Seine", the plan agrees ("the Seine");
- ``stands``: ``router="never"``: the draft "Seine" is the final answer, no plan runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.settings import BudgetSettings, PlannerSettings
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import QUESTION, KeywordSearcher, reader_by_question, two_hop_chat
from tests.routed_chat import RoutedChatModel

__all__ = ["QUESTION", "Gate", "draft_agent", "draft_chat"]

GATE_LIMIT_S = 8.0  # below the agent's llm_timeout_s: a gate nobody opens fails the run visibly


class Gate:
    """Holds one route's reply until ``open`` is called (the model runs the scripted reply in
    a worker thread, so waiting blocks only that call). ``held`` says the call has arrived."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.held = threading.Event()

    def open(self) -> None:
        self.opened.set()

    def wrap(self, route: str | Callable[[list[BaseMessage]], str]) -> Callable[..., str]:
        def gated(messages: list[BaseMessage]) -> str:
            self.held.set()
            self.opened.wait(GATE_LIMIT_S)
            return route(messages) if callable(route) else route

        return gated


def draft_chat(draft: str = "Paris", gate: Gate | None = None) -> RoutedChatModel:
    """The two-hop script with the draft's reader answering ``draft``; with ``gate``, the
    plan's first call (decompose) waits for it."""
    chat = two_hop_chat()
    chat.routes["rag_answer"] = reader_by_question(**{"Which river flows through the city": draft})
    if gate is not None:
        chat.routes["decompose"] = gate.wrap(chat.routes["decompose"])
    return chat


def draft_agent(
    index: TantivySparseIndex,
    chat: RoutedChatModel,
    planner: PlannerSettings | None = None,
) -> HoptreeAgent:
    """The real planner with the product's draft-first defaults unless ``planner`` says
    otherwise (the tests switch the draft or the router off through it)."""
    return HoptreeAgent(
        chat,
        {"keywords": KeywordSearcher(index)},
        planner=planner or PlannerSettings(),
        budgets=BudgetSettings(),
        llm_timeout_s=10,
    )
