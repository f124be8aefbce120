"""The ``verify`` node's routing of a chain through the graph: planned hops that wait for an
answer, hops held back behind a query that found nothing, and the follow-ups that answer it."""

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
from tests.routed_chat import RoutedChatModel


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_a_dependent_query_waits_for_the_answer_it_needs(index) -> None:
    chat = two_hop_chat()
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    # the question itself is searched beside the first round (one-call RAG's retrieval)
    assert searcher.queries == [
        "city where the Eiffel Tower stands",
        QUESTION,
        "river that flows through Paris",
    ]
    assert [(q.id, q.round, q.needs) for q in result.sub_queries] == [
        ("q1", 1, []),
        ("q2", 2, ["q1"]),
    ]
    assert [q.summary for q in result.sub_queries] == ["Paris", "Seine"]
    assert all(q.answered for q in result.sub_queries)
    # every query has a supported finding: no verify call, one findings call per round
    assert chat.count("verify") == 0 and chat.count("summarize") == 2
    assert result.stopped == "sufficient"
    assert not result.degraded and "Degraded" not in result.answer
    assert result.llm_calls == len(chat.seen) == 4
    assert result.prompt_tokens == 10 * len(chat.seen)
    kinds = [e.kind for e in result.trace]
    assert kinds[:2] == ["started", "decompose"] and kinds[-1] == "answer"
    hop = next(e for e in result.trace if e.kind == "next_round")
    assert hop.data["origin"] == "hop"


async def test_an_unsupported_finding_is_not_followed(index) -> None:
    """The model names a city its passages do not hold: that finding counts as not found, and
    the dependent query waits (it is never searched with a guess or with the words of the query
    it needs). The follow-up the merged verify call names finds the supported answer, which
    replaces the failed one, and the dependent query then goes out with it filled in."""

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            **{"French city": ("Paris", "Paris")},
            Eiffel=("Lyon", "Paris"),
        )

    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["city where the Eiffel Tower stands", "river of #1"]),
            "summarize": summarize,
            "verify": reply(sufficient=False, queries=["French city of the Eiffel tower"]),
            "answer": reply(short_answer="Seine", answer="The Seine flows through Paris [1]."),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    first = result.sub_queries[0]
    assert first.proposed == "Lyon" and not first.answered and first.summary == ""
    assert "Lyon" not in " ".join(searcher.queries)
    assert searcher.queries[2:] == ["French city of the Eiffel tower", "river of Paris"]
    (verify_prompt,) = [text for route, text in chat.seen if route == "verify"]
    assert "- city where the Eiffel Tower stands -> NOT FOUND" in verify_prompt
    verdict = next(e for e in result.trace if e.kind == "verify").data
    assert verdict["blocked"] == ["river of #1"]
    hop, follow = result.sub_queries[1], result.sub_queries[2]
    assert follow.origin == "supplement" and follow.replaces == "q1" and follow.answered
    assert first.superseded_by == "q3"
    assert (hop.query, hop.round) == ("river of Paris", 3)


async def test_a_hop_behind_a_step_that_found_nothing_is_never_searched(index) -> None:
    """The first hop found nothing and the follow-up found nothing either: the hop that needs
    it is not searched with the first hop's words, the chain stays open, and the answer reads
    the question's own retrieval (one-call RAG's passages) with no "still open" step named."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["summarize"] = lambda m: finding(user_text(m))
    chat.routes["verify"] = reply(sufficient=False, queries=["tower in the French capital"])
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher], max_rounds=2).ask(QUESTION)
    assert searcher.queries == [
        "city where the Eiffel Tower stands",
        QUESTION,
        "tower in the French capital",
    ]
    hop = result.sub_queries[1]
    assert (hop.query, hop.round, hop.searches) == ("river that flows through #1", 0, [])
    assert result.stopped == "max_rounds"
    # one-call RAG's reader answers: no notes, no "still open" step
    (prompt,) = [text for route, text in chat.seen if route == "rag_answer"]
    assert "Still open" not in prompt and "Notes:" not in prompt
    assert chat.count("answer") == 0
    check = next(e for e in result.trace if e.kind == "answer").data["check"]
    assert check["plan_resolved"] is False
    question_hits = [h.id for h in searcher.index.retrieve(QUESTION, 5)]
    assert set(question_hits[:2]) <= {s["id"] for s in result.sources}


async def test_a_follow_up_that_asks_the_question_again_stands_in_for_no_hop(index) -> None:
    """The verify call asks the whole question again and its finding is the river: that is
    not the city the waiting hop needs, so it replaces no query and fills no ``#1``."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["summarize"] = lambda m: finding(
        user_text(m), **{"northern France": ("Seine", "Seine")}
    )
    chat.routes["verify"] = reply(
        sufficient=False,
        queries=["Which river in northern France flows through the city of the Eiffel Tower"],
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher], max_rounds=2).ask(QUESTION)
    follow = result.sub_queries[2]
    assert follow.origin == "supplement" and follow.answered and follow.replaces is None
    assert not any("Seine" in q for q in searcher.queries)  # no "river that flows through Seine"
    assert result.sub_queries[1].searches == []


async def test_the_question_asked_again_replaces_an_open_query_nothing_waits_on(index) -> None:
    """A plan of one query (the question in other words) left open: a follow-up that asks the
    question again answers that query, so the plan resolves and no second verify call asks
    for it once more."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["decompose"] = reply(queries=["river through the Eiffel Tower city"])
    chat.routes["summarize"] = lambda m: finding(
        user_text(m), **{"northern France": ("Seine", "Seine")}
    )
    chat.routes["verify"] = reply(
        sufficient=False,
        queries=["Which river in northern France flows through the city of the Eiffel Tower"],
    )
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=3).ask(QUESTION)
    follow = result.sub_queries[1]
    assert follow.origin == "supplement" and follow.answered and follow.replaces == "q1"
    assert chat.count("verify") == 1


async def test_without_follow_ups_a_blocked_hop_ends_the_plan(index) -> None:
    """With the supplement switch off nothing can answer the failed first hop again: the
    plan stops there and its dependent hop is never searched."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["summarize"] = lambda m: finding(user_text(m))
    searcher = KeywordSearcher(index)
    agent = HoptreeAgent(
        chat,
        {searcher.name: searcher},
        planner=PlannerSettings(draft=False, supplement=False, findings_call="batched"),
        budgets=BudgetSettings(),
        llm_timeout_s=5,
    )
    result = await agent.ask(QUESTION)
    assert searcher.queries == ["city where the Eiffel Tower stands", QUESTION]
    assert result.stopped == "no_supplement" and chat.count("verify") == 0
    verdict = next(e for e in result.trace if e.kind == "verify").data
    assert verdict["blocked"] == ["river that flows through #1"]


async def test_a_follow_up_asking_what_a_finding_answers_is_not_sent(index) -> None:
    def summarize(messages: list[BaseMessage]) -> str:
        return finding(user_text(messages), Eiffel=("Paris", "Paris"))

    chat = RoutedChatModel(
        routes={
            "decompose": reply(
                queries=["city where the Eiffel Tower stands", "length of the Nile"]
            ),
            "summarize": summarize,
            "verify": reply(
                sufficient=False,
                queries=["the city where the Eiffel Tower stands?", "Nile length in km"],
            ),
            "answer": reply(short_answer="Paris", answer="Paris [1]."),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher], max_rounds=2).ask("Eiffel Tower and the Nile?")
    assert "the city where the Eiffel Tower stands?" not in searcher.queries
    supplement = next(e for e in result.trace if e.kind == "next_round")
    assert [q["query"] for q in supplement.data["sub_queries"]] == ["Nile length in km"]
    assert supplement.data["dropped"] == ["the city where the Eiffel Tower stands?"]
    assert result.sub_queries[-1].replaces == "q2"


async def test_follow_ups_that_echo_the_findings_format_are_cleaned(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Who wrote The Hobbit?"]),
            "summarize": lambda m: finding(user_text(m)),
            "verify": reply(
                sufficient=False, queries=["Who wrote The Hobbit? -> NOT FOUND -> Tolkien"]
            ),
            "rag_answer": reply(answer="Tolkien"),
        }
    )
    searcher = KeywordSearcher(index)
    await agent_with(chat, [searcher]).ask("Who was the author of The Hobbit?")
    # what is left after the echo is the query already asked: nothing new is searched (the
    # question itself was searched as written beside the first round)
    assert searcher.queries == ["Who wrote The Hobbit?", "Who was the author of The Hobbit?"]


async def test_a_planned_hop_is_not_held_back_by_the_query_budget(index) -> None:
    """The waiting query was counted when it was planned: sending it adds no query."""
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index)], max_sub_queries=2).ask(QUESTION)
    assert [q.round for q in result.sub_queries] == [1, 2]
    assert result.stopped == "sufficient"


async def test_planned_hops_run_past_max_rounds_to_the_end_of_the_chain(index) -> None:
    """A three-hop plan with max_rounds=1: the hops still go out one round each (follow-up
    rounds are what max_rounds bounds), and the chain's end answers."""
    chat = two_hop_chat(answer=reply(short_answer="Paris", answer="Paris [1]."))
    chat.routes["decompose"] = reply(
        queries=[
            "landmark on the Champ de Mars",
            "city where #1 stands",
            "river that flows through #2",
        ]
    )

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            **{
                "Champ de Mars": ("Eiffel Tower", "Paris"),
                "Eiffel Tower stands": ("Paris", "Paris"),
                "through Paris": ("Seine", "Seine"),
            },
        )

    chat.routes["summarize"] = summarize
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=1).ask(
        "Which river flows through the city of the landmark on the Champ de Mars?"
    )
    assert [q.round for q in result.sub_queries] == [1, 2, 3]
    assert result.short_answer == "Seine"


async def test_a_long_finding_is_searched_by_its_name_without_the_aside(index) -> None:
    chat = two_hop_chat()

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            Eiffel=("Paris (the capital and most populous city of France)", "Paris"),
            **{"through Paris": ("Seine", "Seine")},
        )

    chat.routes["summarize"] = summarize
    searcher = KeywordSearcher(index)
    await agent_with(chat, [searcher]).ask(QUESTION)
    assert "river that flows through Paris" in searcher.queries
