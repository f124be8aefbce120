"""The ``answer`` node on a plan that resolved: the passages it reads, the notes, the chain it
follows, the comparison it computes and the citation check."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from agent.settings import PlannerSettings
from searchers.passages import Passage
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    QUESTION,
    KeywordSearcher,
    agent_with,
    number_any,
    passages_index,
    reply,
    two_hop_chat,
    user_text,
)
from tests.routed_chat import RoutedChatModel


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_the_answer_reads_the_findings_passages_first_with_notes(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    (prompt,) = [text for route, text in chat.seen if route == "answer"]
    notes, passages = prompt.split("Notes:")[1].split("Passages:")
    assert "- city where the Eiffel Tower stands: Paris" in notes
    assert "- river that flows through Paris: Seine" in notes
    lines = [line for line in passages.strip().splitlines() if line.startswith("[")]
    assert lines[0].startswith("[1] Paris:") and lines[1].startswith("[2] Seine:")
    assert (
        len(lines)
        <= PlannerSettings(draft=False, supplement=True, findings_call="batched").answer_sources
    )
    assert [s["id"] for s in result.sources][:2] == ["paris", "seine"]
    # [9] cites nothing that was shown: it is removed, the others map to passages
    assert "[9]" not in result.answer
    assert [(c.n, c.id) for c in result.citations] == [(1, "paris"), (2, "seine")]
    assert result.citation_check["dropped"] == 0


async def test_a_sentence_no_cited_passage_supports_is_dropped(index) -> None:
    chat = two_hop_chat(
        answer=reply(
            short_answer="Seine",
            answer="The Seine flows through Paris [2]. The Seine flows into the North Sea "
            "in 1937 [1].",
        )
    )
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    assert result.answer == "The Seine flows through Paris [2]."
    assert result.citation_check["dropped"] == 1
    assert [c.id for c in result.citations] == ["seine"]
    answer_event = next(e for e in result.trace if e.kind == "answer")
    assert answer_event.data["check"]["dropped"] == 1


async def test_a_bridge_short_answer_becomes_the_last_hops_finding(index) -> None:
    """The reader answers with the city the second query was asked about; the chain's last
    hop found the river, so the river is the short answer, and the trace says why."""
    chat = two_hop_chat(
        answer=reply(short_answer="Paris", answer="The Seine flows through Paris [2].")
    )
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    assert result.short_answer == "Seine"
    answer_event = next(e for e in result.trace if e.kind == "answer")
    assert answer_event.data["check"]["last_hop"] == "Seine"
    assert answer_event.data["check"]["short_answer_written"] == "Paris"


async def test_a_comparison_the_findings_decide_is_computed_not_read(tmp_path: Path) -> None:
    films = TantivySparseIndex.create(tmp_path / "films")
    films.add(
        [
            Passage("alpha", "Alpha (film)", "Alpha is a drama film released on 3 May 1950."),
            Passage("beta", "Beta (film)", "Beta is a comedy film released in 1962."),
        ]
    )

    def summarize(messages: list[BaseMessage]) -> str:
        items, text = [], user_text(messages)
        for block in text.split("Query ")[1:]:
            n, query = block.split(":", 1)
            title, year = (
                ("Alpha (film)", "3 May 1950") if "Alpha" in query else ("Beta (film)", "1962")
            )
            items.append({"query": int(n), "answer": year, "passages": [number_any(text, title)]})
        return reply(findings=items)

    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["release date of Alpha", "release date of Z"]),
            "summarize": summarize,
            # the reader gets it backwards, as the local model did on HotpotQA
            "answer": reply(short_answer="Beta", answer="Beta came out first [2]."),
        }
    )
    result = await agent_with(chat, [KeywordSearcher(films)]).ask(
        "Which film came out first, Alpha or Beta?"
    )
    # "Z" is filled with the second alternative; both findings are supported
    assert [q.query for q in result.sub_queries] == [
        "release date of Alpha",
        "release date of Beta",
    ]
    assert [q.summary for q in result.sub_queries] == ["3 May 1950", "1962"]
    assert result.short_answer == "Alpha"
    assert result.citation_check["comparison"] == {
        "direction": "min",
        "kind": "date",
        "values": {"Alpha": "3 May 1950", "Beta": "1962"},
        "picked": "Alpha",
    }
    # issue 65 item 6: the answer cites a passage for each alternative
    assert sorted(c.title for c in result.citations) == ["Alpha (film)", "Beta (film)"]


async def test_a_resolved_chain_answers_with_its_last_hop_from_its_own_passages(index) -> None:
    """Both hops found their answers in their passages: the reader reads only those two
    passages (no distractors), and the chain's last finding is the short answer even when the
    reader copies the bridge city with other words."""
    chat = two_hop_chat(
        answer=reply(short_answer="the capital Paris", answer="The Seine flows through Paris [2].")
    )
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    assert [s["id"] for s in result.sources] == ["paris", "seine"]
    assert result.short_answer == "Seine"
    check = next(e for e in result.trace if e.kind == "answer").data["check"]
    assert check["plan_resolved"] is True and check["chain_end"] == "Seine"


async def test_a_resolved_chain_names_no_open_step(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    (prompt,) = [text for route, text in chat.seen if route == "answer"]
    assert "Still open" not in prompt
    assert "open_step" not in next(e for e in result.trace if e.kind == "answer").data["check"]


async def test_a_chain_question_planned_as_one_query_keeps_the_wide_context(index) -> None:
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [2]."))
    # one query, not words the question writes (the residual hop would ask the question's
    # river of #1 as a second after "city where the Eiffel Tower stands")
    chat.routes["decompose"] = reply(queries=["the Eiffel Tower's city"])
    planner = PlannerSettings(draft=False, supplement=True, findings_call="batched")
    result = await agent_with(chat, [KeywordSearcher(index)], planner=planner).ask(QUESTION)
    check = next(e for e in result.trace if e.kind == "answer").data["check"]
    assert check["plan_resolved"] is True  # its one query was answered ...
    assert len(result.sources) > 2  # ... but one query does not cover a chain question
