"""The answer call failing: a dead endpoint is a clear error, a failed or timed-out call leaves
a degraded answer from the findings or from the likeliest sentence."""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from agent.service import AgentError
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    QUESTION,
    KeywordSearcher,
    agent_with,
    finding,
    passages_index,
    two_hop_chat,
    user_text,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_a_dead_chat_endpoint_is_a_clear_error(index) -> None:
    chat = two_hop_chat()
    chat.fail = {"decompose", "summarize", "verify", "supplement", "answer", "rag_answer"}
    agent = agent_with(chat, [KeywordSearcher(index)])
    with pytest.raises(AgentError, match="could not write the answer"):
        await agent.ask("Which river flows through Paris?")
    events = [e async for e in agent.stream("Which river flows through Paris?")]
    assert events[-1].kind == "error" and events[-1].data["fatal"]
    assert "ConnectionError" in events[-1].data["error"]


async def test_an_answer_call_that_fails_leaves_a_degraded_answer_from_the_findings(
    index,
) -> None:
    """The answer call died (a timeout on a starved machine, a dropped connection) after the
    chain resolved: the run still answers, from its last hop's finding, cited where the
    answer step showed its passage, and says it is degraded and why."""
    chat = two_hop_chat()
    chat.fail = {"answer"}
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    assert result.short_answer == "Seine"
    assert result.degraded
    assert any("without the model" in r for r in result.degraded_reasons)
    assert [c.title for c in result.citations] and all(
        "Seine" in c.text or "Paris" in c.text for c in result.citations
    )


async def test_an_answer_call_that_times_out_with_no_finding_cites_the_likeliest_sentence(
    index,
) -> None:
    """No finding was supported and the answer call timed out (a queued or starved model, not
    a dead one): the run returns the shown sentence with the most of the question's terms,
    cited, no short answer, flagged degraded, instead of failing the question."""
    chat = two_hop_chat()

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(user_text(messages))

    chat.routes["summarize"] = summarize
    chat.slow = {"rag_answer"}  # the plan stayed open: one-call RAG's reader answers it
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=1).ask(QUESTION)
    assert result.degraded and result.short_answer == ""
    assert any("without the model" in r for r in result.degraded_reasons)
    assert result.citations
    cited = result.citations[0]
    sentence = result.answer.split(" [")[0]
    assert sentence in cited.text and ("Eiffel" in sentence or "Seine" in sentence), sentence


async def test_an_answer_call_that_cannot_connect_with_no_finding_is_a_clear_error(
    index,
) -> None:
    """A connection failure of the answer call with no finding stays a clear error: only a
    timeout (a live model that was too slow) gets the extractive answer."""
    chat = two_hop_chat()
    chat.routes["summarize"] = lambda messages: finding(user_text(messages))
    chat.fail = {"rag_answer"}  # the plan stayed open: one-call RAG's reader answers it
    with pytest.raises(AgentError, match="could not write the answer"):
        await agent_with(chat, [KeywordSearcher(index)], max_rounds=1).ask(QUESTION)
