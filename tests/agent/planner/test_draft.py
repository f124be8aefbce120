"""Draft first (``agent.planner.draft``): the one-call draft, the router after it, and which
answer wins when the plan runs. Scripted chat models over a real tantivy index; every test
fails with the draft or the router switched off."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from agent.checks.escalation import answer_logprobs
from agent.settings import PlannerSettings
from searchers.sparse_tantivy import TantivySparseIndex
from searchers.structured_calls import reply_logprobs
from tests.planner_scripts import (
    QUESTION,
    KeywordSearcher,
    agent_with,
    asked,
    passages_index,
    reader_by_question,
    reply,
    tiny_index,
    two_hop_chat,
)
from tests.routed_chat import RoutedChatModel

SINGLE = "Which river flows through Paris?"
DRAFT = PlannerSettings()  # the product's defaults (``agent_with`` switches the draft off)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


def routes(chat: RoutedChatModel) -> list[str]:
    return [route for route, _ in chat.seen]


async def test_a_single_fact_is_answered_by_the_draft_alone(index) -> None:
    chat = two_hop_chat()
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher], DRAFT).ask(SINGLE)
    assert routes(chat) == ["rag_answer"]  # one call: no plan, no second read
    assert searcher.queries == [SINGLE]
    assert result.short_answer == "Seine" and result.stopped == "draft"
    assert result.draft is not None and result.draft.stands
    assert result.draft.short_answer == "Seine"
    assert [c.id for c in result.citations] == [c.id for c in result.draft.citations]
    assert result.citations and result.citations[0].title == "Seine"
    assert result.final_choice == {"source": "draft", "reason": "draft stands: supported"}
    assert result.citation_check["answered_as"] == "draft"
    kinds = [event.kind for event in result.trace]
    assert kinds == ["search", "draft", "answer"]
    assert result.first_answer_s is not None and result.first_answer_s <= result.seconds


async def test_switched_off_the_planner_runs_from_the_start(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(
        chat,
        [KeywordSearcher(index)],
        PlannerSettings(draft=False, supplement=True, findings_call="batched"),
    ).ask(SINGLE)
    assert routes(chat)[0] == "decompose"
    assert result.draft is None and result.final_choice is None
    assert "draft" not in [event.kind for event in result.trace]


async def test_a_chain_goes_to_the_plan_and_the_question_is_searched_once(index) -> None:
    chat = two_hop_chat()
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher], DRAFT).ask(QUESTION)
    assert routes(chat)[:2] == ["rag_answer", "decompose"]
    assert searcher.queries.count(QUESTION) == 1  # the draft's search serves the plan too
    assert result.draft is not None and result.draft.to_json()["decision"] == {
        "escalate": True,
        "reason": "shape: chain",  # a scripted model sends no log-probabilities
        "policy": "fitted",
    }
    # the resolved chain agrees with the draft ("the Seine" and "Seine"): the plan's answer
    assert result.short_answer == "the Seine"
    assert result.final_choice == {"source": "plan", "reason": "resolved agrees with the draft"}
    draft_event = next(e for e in result.trace if e.kind == "draft")
    assert draft_event.data["final"] is False and draft_event.data["signals"]["shape"] == "chain"


async def test_a_supported_chain_replaces_a_different_draft(index) -> None:
    chat = two_hop_chat()
    # the draft reads the bridge, a span of its passages
    chat.routes["rag_answer"] = reader_by_question(**{"Which river flows": "Paris"})
    result = await agent_with(chat, [KeywordSearcher(index)], DRAFT).ask(QUESTION)
    assert result.draft is not None and result.draft.short_answer == "Paris"
    assert result.short_answer == "the Seine"
    assert result.final_choice == {"source": "plan", "reason": "supported chain over one read"}
    answer_event = next(e for e in result.trace if e.kind == "answer")
    assert answer_event.data["final"]["source"] == "plan"


async def test_an_open_plan_answers_with_the_draft_without_reading_again(index) -> None:
    chat = two_hop_chat()
    # the first hop's reading is no span of its passages: the plan stays open
    chat.routes["rag_answer"] = reader_by_question(
        **{"Which river flows": "Seine", "Eiffel Tower stands": "Lyon"}
    )
    result = await agent_with(chat, [KeywordSearcher(index)], DRAFT, max_rounds=1).ask(QUESTION)
    # the draft read the question, the plan its first hop; the open plan reads nothing more
    read = [asked([HumanMessage(text)]) for route, text in chat.seen if route == "rag_answer"]
    assert read == [QUESTION, "city where the Eiffel Tower stands"]
    assert "answer" not in routes(chat)
    assert result.short_answer == "Seine"
    assert result.final_choice == {"source": "draft", "reason": "plan open: the draft stands"}
    assert result.citation_check["answered_as"] == "draft"
    assert result.citations and result.citations[0].title == "Seine"


@pytest.mark.parametrize(
    ("router", "escalates"), [("always", True), ("never", False), ("fitted", False)]
)
async def test_the_router_setting_decides_on_a_single_fact(index, router, escalates) -> None:
    chat = two_hop_chat()
    settings = PlannerSettings(router=router)
    result = await agent_with(chat, [KeywordSearcher(index)], settings).ask(SINGLE)
    assert result.draft is not None
    assert result.draft is not None and result.draft.decision is not None
    assert result.draft.decision.escalate is escalates
    assert ("decompose" in routes(chat)) is escalates


async def test_router_never_keeps_the_draft_even_for_a_chain(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index)], PlannerSettings(router="never")).ask(
        QUESTION
    )
    assert routes(chat) == ["rag_answer"]
    assert result.short_answer == "Seine" and result.draft is not None


async def test_a_draft_that_cannot_be_written_hands_over_to_the_plan(index) -> None:
    chat = two_hop_chat()
    reader, calls = chat.routes["rag_answer"], []

    def first_unparseable(messages):  # the draft's reply is unparseable: no draft
        calls.append(1)
        return reply(wrong_field="no") if len(calls) == 1 else reader(messages)

    chat.routes["rag_answer"] = first_unparseable
    result = await agent_with(chat, [KeywordSearcher(index)], DRAFT).ask(SINGLE)
    assert result.draft is not None and result.draft.error and not result.draft.is_written
    assert result.draft.decision is not None and result.draft.decision.escalate is True
    assert result.draft.to_json() == {
        "decision": result.draft.decision.to_json(),
        "error": result.draft.error,
    }
    assert "decompose" in routes(chat)
    assert result.final_choice is None and result.short_answer


def test_the_draft_confidence_reads_the_answer_tokens_not_the_json() -> None:
    tokens = [('{"', -0.01), ("answer", -0.02), ('":', 0.0), (' "', -0.1), ("Se", -2.0)]
    tokens += [("ine", -0.5), ('"}', -0.01)]
    assert answer_logprobs(tokens, "Seine") == [-2.0, -0.5]
    assert answer_logprobs(tokens, "Danube") == [lp for _, lp in tokens]
    assert answer_logprobs([], "Seine") == []


def test_logprobs_are_read_from_an_openai_compatible_reply() -> None:
    content = [{"token": "Se", "logprob": -1.5}, {"token": "ine", "logprob": -0.25}]
    message = AIMessage(content="Seine", response_metadata={"logprobs": {"content": content}})
    assert reply_logprobs(message) == (("Se", -1.5), ("ine", -0.25))
    assert reply_logprobs(AIMessage(content="Seine")) == ()
    assert reply_logprobs(SimpleNamespace()) == ()


def test_a_draft_settled_again_keeps_the_sentence_that_holds_it() -> None:
    """``answer.redraft`` answers with the draft without a call (an open plan, or a comparison
    the plan's findings agree with). The draft is the reader's, whose long answer is the shown
    sentence holding its span; settled again, that sentence is what is cited, not the bare
    span."""
    from agent.planner.answer import redraft
    from agent.planner.plan import Plan
    from agent.results import Draft
    from agent.rules.question import Question
    from searchers.passages import Hit, Passage

    text = "The Seine is a river in France. The Seine flows through Paris on its way to the sea."
    hit = Hit(Passage("seine", "Seine", text), 3.0, "sparse").to_json()
    draft = Draft(
        short_answer="Seine",
        written="Seine",
        answer="The Seine flows through Paris on its way to the sea [1].",
        sources=[{"n": 1, "id": "seine", "title": "Seine", "text": text, "shown": text}],
        hits=[hit],
        supported=True,
    )
    composed = redraft(Plan(question=Question.read(SINGLE)), draft)
    assert composed.short == "Seine"
    assert "flows through Paris" in composed.text and "[1]" in composed.text
    assert [c.id for c in composed.citations] == ["seine"]


def test_a_draft_reads_back_from_the_state_and_from_what_a_surface_sent() -> None:
    """The state keeps the whole draft (``to_record``); a surface sends the part a person sees
    (``to_json``), and both read back (``from_json``) to the same draft as far as they hold it."""
    from agent.results import Citation, Draft, DraftDecision

    text = "The Seine flows through Paris."
    draft = Draft(
        short_answer="Seine",
        answer="The Seine flows through Paris [1].",
        citations=[Citation(1, "seine", "Seine", text)],
        seconds=4.567,
        signals={"shape": "single"},
        decision=DraftDecision(False, "shape: single", "fitted"),
        sources=[{"n": 1, "id": "seine", "title": "Seine", "text": text, "shown": text}],
        citation_check={"sentences": 1},
        supported=True,
        written="the Seine",
    )
    assert Draft.from_json(draft.to_record()) == draft
    public = draft.to_json()
    assert list(public) == ["short_answer", "answer", "citations", "seconds", "signals", "decision"]
    assert public["seconds"] == 4.57 and public["decision"]["escalate"] is False
    seen = Draft.from_json(public)
    assert seen.short_answer == "Seine" and seen.stands and seen.citations == draft.citations
    assert seen.sources == [] and not seen.supported  # what a person is not sent
    assert Draft.from_state({}) is None and Draft.from_state({"draft": draft.to_record()}) == draft


# the answer sits past the first 350 characters, in a sentence with none of the question's words
OUTFLOW = [
    (
        "varo",
        "Lake Varo",
        "Lake Varo is a lake in the north of the valley. "
        + "Reeds line its shore and birds nest there in spring. " * 8
        + "Its outflow is the Ostra.",
    ),
    ("reeds", "Reeds", "Reeds grow along the shores of many lakes."),
]


async def test_the_free_reader_reads_whole_passages_and_a_free_text_reply(tmp_path_factory) -> None:
    """``answer_reader="free"``: the draft's call shows whole passages in the system message and
    the question alone, its plain-text reply is the draft, and the passages the citation check
    reads are the whole ones. With the JSON reader the sentence is trimmed away (and a plain
    reply does not parse), so the draft cannot say "Ostra"."""
    index = tiny_index(tmp_path_factory, "outflow", OUTFLOW)
    question = "Which river drains Lake Varo?"

    def reads_what_it_is_shown(messages) -> str:
        shown = " ".join(str(m.content) for m in messages)
        return "Ostra" if "outflow is the Ostra" in shown else reply(answer="not given")

    chat = RoutedChatModel(routes={"rag_answer": reads_what_it_is_shown})
    planner = PlannerSettings(answer_reader="free")
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(question)
    assert chat.seen == [("rag_answer", f"Question: {question}")]
    assert result.short_answer == "Ostra" and result.stopped == "draft"
    assert result.draft is not None and result.draft.supported
    assert "Its outflow is the Ostra [1]." in result.answer
    assert [c.title for c in result.citations] == ["Lake Varo"]
    assert result.sources[0]["shown"] == OUTFLOW[0][2]


FILMS = [
    (
        "alpha",
        "Alpha (film)",
        "Alpha is a drama film directed by Ann Rowe. It was released on 3 May 1950.",
    ),
    ("beta", "Beta (film)", "Beta is a comedy film released in 1962 by Gemini Pictures."),
]
CHOICE = "Which film came out first, Alpha or Beta?"


@pytest.mark.parametrize("reader", ["free", "json"])
async def test_a_choice_draft_cites_both_alternatives(tmp_path_factory, reader) -> None:
    """Issue 65 item 6 on the draft path: the reader names one film and cites its passage; the
    draft's answer also cites the other film's dated sentence, so both sides are shown."""
    index = tiny_index(tmp_path_factory, f"films-{reader}", FILMS)
    free = (
        "Alpha"
        if reader == "free"
        else reply(short_answer="Alpha", answer="Alpha came out first [1].")
    )
    chat = RoutedChatModel(routes={"rag_answer": free})
    planner = PlannerSettings(answer_reader=reader, router="never")
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(CHOICE)
    assert result.short_answer == "Alpha" and result.stopped == "draft"
    assert sorted(c.title for c in result.citations) == ["Alpha (film)", "Beta (film)"]
    beta = next(c.n for c in result.citations if c.title == "Beta (film)")
    assert f"Beta is a comedy film released in 1962 by Gemini Pictures [{beta}]." in result.answer


@pytest.mark.parametrize("draft", [True, False])
async def test_a_choice_is_answered_by_the_alternative_never_yes(tmp_path_factory, draft) -> None:
    """Issue 65 item 6 on the draft path and the answer path (the draft switched off): the
    reader writes "Yes" to "which came first, A or B?" and names Alpha in its long answer; the
    short answer is "Alpha", and both films' passages are cited."""
    index = tiny_index(tmp_path_factory, f"films-yes-{draft}", FILMS)
    yes = reply(short_answer="Yes", answer="Yes, Alpha came out first.")
    chat = RoutedChatModel(
        routes={
            "rag_answer": yes,
            "decompose": reply(queries=["release date of Alpha", "release date of Beta"]),
            "summarize": reply(findings=[]),
            "answer": yes,
        }
    )
    planner = PlannerSettings(answer_reader="json", draft=draft, supplement=False)
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(CHOICE)
    assert routes(chat)[0] == ("rag_answer" if draft else "decompose")
    assert result.short_answer == "Alpha"
    assert sorted(c.title for c in result.citations) == ["Alpha (film)", "Beta (film)"]


async def test_a_yes_no_comparison_draft_cites_each_subject(tmp_path_factory) -> None:
    """Issue 65 item 6: the free reader's bare "Yes" to "Are A and B both ...?" cites nothing;
    the draft's answer cites a sentence of each film's passage."""
    index = tiny_index(tmp_path_factory, "films-both", FILMS)
    chat = RoutedChatModel(routes={"rag_answer": "Yes"})
    planner = PlannerSettings(router="never")
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(
        "Are Alpha and Beta both films?"
    )
    assert result.short_answer == "Yes" and result.answer.startswith("Yes. ")
    assert sorted(c.title for c in result.citations) == ["Alpha (film)", "Beta (film)"]


async def test_a_chain_answer_naming_no_alternative_leaves_a_draft_that_names_one(index) -> None:
    """ "A or B?" is answered by A or B: a supported chain whose answer is neither does not
    replace a draft naming one (``escalation.final_choice``'s alternatives rule)."""
    chat = two_hop_chat(answer=reply(short_answer="Paris", answer="It is Paris [1]."))
    choice = "Which river flows through the city where the Eiffel Tower stands, Seine or Loire?"
    chat.routes["rag_answer"] = reader_by_question(**{"Seine or Loire": "Seine"})
    result = await agent_with(chat, [KeywordSearcher(index)], DRAFT).ask(choice)
    assert "answer" in routes(chat)  # the plan ran and resolved the chain to "Paris"
    assert result.draft is not None and result.draft.short_answer == "Seine"
    assert result.short_answer == "Seine"
    assert result.final_choice == {
        "source": "draft",
        "reason": "chain answer is no alternative: the draft stands",
    }
