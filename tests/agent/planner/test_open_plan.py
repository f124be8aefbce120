"""The ``answer`` node on an open plan: read from the question's own hits as one-call RAG reads
them."""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.settings import BudgetSettings, PlannerSettings
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    QUESTION,
    KeywordSearcher,
    agent_with,
    finding,
    passages_index,
    reply,
    two_hop_chat,
    user_text,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_an_open_plan_reads_everything_found(index) -> None:
    """The second hop found nothing: the plan is not resolved, so the answer reads the wider
    one-call-RAG-sized context and the reader's answer stands."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [2]."))

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(user_text(messages), Eiffel=("Paris", "Paris"))

    chat.routes["summarize"] = summarize
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=1).ask(QUESTION)
    check = next(e for e in result.trace if e.kind == "answer").data["check"]
    assert check["plan_resolved"] is False and "chain_end" not in check
    assert len(result.sources) > 2


async def test_a_plan_that_found_everything_with_a_nameless_query_is_answered_open(index) -> None:
    """The query "river that flows through it" names nothing: its finding does not resolve the
    plan (``Plan.resolved``), so one-call RAG's reader answers, and the report says which query
    kept the plan open beside ``plan_resolved``."""
    chat = two_hop_chat()
    chat.routes["decompose"] = reply(
        queries=["city where the Eiffel Tower stands", "river that flows through it"]
    )
    chat.routes["summarize"] = lambda m: finding(
        user_text(m), Eiffel=("Paris", "Paris"), **{"flows through": ("Seine", "Seine")}
    )
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    assert all(sub.answered for sub in result.sub_queries)  # every query found something
    check = result.citation_check
    assert check["plan_resolved"] is False and check["answered_as"] == "one_call"
    assert check["nameless_queries"] == ["river that flows through it"]
    assert [route for route, _ in chat.seen][-1] == "rag_answer"
    assert result.stopped == "sufficient"


async def test_an_open_plan_falls_back_on_the_questions_own_passages(index) -> None:
    """The plan asked about the wrong thing and found nothing: the answer reads what the
    question itself retrieved, as one-call RAG would."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["decompose"] = reply(queries=["length of the river Danube"])
    chat.routes["summarize"] = lambda m: finding(user_text(m))
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=1).ask(
        "Which river flows through Paris?"
    )
    question_top = [h.id for h in index.retrieve("Which river flows through Paris?", 2)]
    assert [s["id"] for s in result.sources][:2] == question_top


async def test_an_open_plan_can_be_answered_as_one_call_rag(index) -> None:
    """The default: a plan that did not resolve is answered
    by one-call RAG's reader (``prompts/rag_answer.txt``) over the question's own hits alone,
    with no notes, and its long answer is the shown sentence that holds the short one, cited."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["summarize"] = lambda m: finding(user_text(m), Eiffel=("Paris", "Paris"))
    question_top = [h.id for h in index.retrieve(QUESTION, 3)]

    async def run(planner: PlannerSettings):
        chat.seen.clear()
        agent = HoptreeAgent(
            chat, {"keywords": KeywordSearcher(index)}, planner=planner,
            budgets=BudgetSettings(max_rounds=2), llm_timeout_s=5,
        )  # fmt: skip
        result = await agent.ask(QUESTION)
        assert not result.sub_queries[1].answered  # the plan stayed open
        [(route, prompt)] = [(r, t) for r, t in chat.seen if r in ("answer", "rag_answer")]
        return [s["id"] for s in result.sources], route, prompt, result

    ids, route, prompt, result = await run(
        PlannerSettings(draft=False, supplement=True, findings_call="batched", answer_sources=3)
    )
    assert ids == question_top and route == "rag_answer"
    head = prompt.split("Passages:")[0]  # no finding above the passages
    assert "Notes:" not in head and "Paris" not in head
    check = result.citation_check
    assert check["answered_as"] == "one_call" and not check["plan_resolved"]
    # no shown passage holds the scripted reader's "Seine": no sentence to cite
    assert result.short_answer == "Seine" and result.answer == "Seine." and not result.citations
    assert not check["short_answer_grounded"]
    chat.routes["rag_answer"] = reply(answer="Danube")
    ids, route, prompt, result = await run(
        PlannerSettings(draft=False, supplement=True, findings_call="batched", answer_sources=3)
    )
    sentence, cited = result.answer.rsplit(" [", 1)
    [citation] = result.citations
    assert "Danube" in sentence and sentence in " ".join(citation.text.split())
    assert cited == f"{ids.index(citation.id) + 1}]."
