"""A ReAct agent as LangChain builds one today, with a search tool over hoptree's retriever.

``langchain.agents.create_agent`` is the agent LangGraph's prebuilt ``create_react_agent`` now
points to (deprecated since LangGraph 1.0 in its favour): a LangGraph loop of a model step that
may call tools and a tool step that runs them, until the model answers without a tool call.
The model is ``ChatOpenAI`` at the metered endpoint (temperature 0, the run's output cap and
timeout); its one tool, ``search(query)``, returns hoptree's top k BM25 passages for the query
as text (title, then text, one passage after another). A short system prompt of ours tells it
to search and to answer in a few words.

The model's tool calls are the server's parse of its output (llama.cpp's jinja chat template):
a reply without a tool call simply ends the loop, and that reply is the answer. The loop is
bounded by LangGraph's recursion limit: at most ``MAX_MODEL_CALLS`` model steps (with the tool
steps between them); a model that still wants to search at the last one has given no answer,
so the question scores an empty prediction with a note.

The prediction is the last model message's text with whitespace and an ``Answer:`` prefix
stripped, nothing else; the text itself is kept as ``raw``. Per question: two model calls on the
shortest path (search, answer), one per further search, ``MAX_MODEL_CALLS`` at most.
"""

from __future__ import annotations

import re
from typing import Any

from evals.peers.base import Peer, PeerAnswer, PeerInstall, PeerQuestion, peer

LANGCHAIN_VERSION = "1.5.2"
INSTALL = PeerInstall(
    ("langchain", "langgraph"), f'pip install "hoptree[peers]" (langchain=={LANGCHAIN_VERSION})'
)
MAX_MODEL_CALLS = 6
# model and tool steps alternate, starting and ending with a model step
RECURSION_LIMIT = 2 * MAX_MODEL_CALLS - 1
SYSTEM_PROMPT = (
    "You answer questions using the search tool, which returns passages from Wikipedia. "
    "Search as many times as you need, one query at a time, until the passages answer the "
    "question. Then reply with the answer only: a few words, no explanation."
)
_ANSWER_PREFIX = re.compile(r"^\s*(final\s+)?answer\s*:\s*", re.IGNORECASE)


def presented(text: str) -> str:
    """The agent's final text as it presents the answer: whitespace and an "Answer:" prefix
    stripped, nothing else."""
    return _ANSWER_PREFIX.sub("", " ".join(text.split()))


def _agent(q: PeerQuestion) -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def search(query: str) -> str:
        """Search Wikipedia. Returns the passages that best match the query."""
        hits = q.retrieve(query, q.k)
        return "\n\n".join(f"{hit.title}\n{hit.text}" for hit in hits) or "No passages found."

    model = ChatOpenAI(
        base_url=q.base_url,
        model=q.model,
        api_key=q.api_key,
        temperature=0,
        max_tokens=q.max_tokens,
        timeout=q.timeout_s,
    )
    return create_agent(model, [search], system_prompt=SYSTEM_PROMPT)


def run(q: PeerQuestion) -> PeerAnswer:
    from langchain_core.messages import AIMessage
    from langgraph.errors import GraphRecursionError

    state: dict[str, Any] = {"messages": []}
    notes = []
    try:
        for values in _agent(q).stream(
            {"messages": [("user", q.question)]},
            {"recursion_limit": RECURSION_LIMIT},
            stream_mode="values",
        ):
            state = values  # kept step by step: the limit raises after the last one
    except GraphRecursionError:
        notes.append(f"no answer within {MAX_MODEL_CALLS} model calls (the recursion limit)")
    messages = state["messages"]
    last = messages[-1] if messages else None
    searches = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
    details = {"searches": searches}
    if not isinstance(last, AIMessage) or last.tool_calls:
        return PeerAnswer("", notes=notes or ["the agent ended without an answer"], details=details)
    return PeerAnswer(presented(last.text), raw=last.text, notes=notes, details=details)


PEERS: list[Peer] = [
    peer(
        "peer-react",
        f"LangChain {LANGCHAIN_VERSION}'s ReAct agent (create_agent, a LangGraph loop) with a "
        f"BM25 search tool, at most {MAX_MODEL_CALLS} model calls",
        INSTALL,
        run,
    )
]
