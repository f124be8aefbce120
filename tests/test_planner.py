"""The planner graph's control flow, with a routed scripted chat model and real tantivy.

The searchers here are small LLM-free ones over a real tantivy index, so every LLM call the
tests see is the planner's own and the scripted replies decide the route the graph takes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.question import QuestionError
from agent.service import AgentError
from agent.settings import BudgetSettings, PlannerSettings
from searchers.passages import Passage
from searchers.searcher import Attempt, SearchResult
from searchers.sparse_tantivy import TantivySparseIndex
from tests.routed_chat import RoutedChatModel

DATA = Path(__file__).parent / "data" / "passages.jsonl"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    idx = TantivySparseIndex.create(tmp_path_factory.mktemp("planner") / "sparse")
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    idx.add([Passage(r["id"], r["title"], r["text"], r.get("metadata") or {}) for r in rows])
    return idx


class KeywordSearcher:
    """BM25 on the query as written; no LLM, so the test controls every model call."""

    description = "plain BM25 over the query's words"

    def __init__(self, index: TantivySparseIndex, name: str = "keywords") -> None:
        self.index = index
        self.name = name
        self.queries: list[str] = []

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        self.queries.append(query)
        hits = self.index.retrieve(query, k)
        attempt = Attempt(id=0, operation="original", query=query, hit_ids=[h.id for h in hits])
        return SearchResult(self.name, query, hits, [attempt], 0, False, "exhausted", 0, 1.0)


class ExplodingSearcher:
    name = "exploding"
    description = "raises on every search, like a plugin with a bug"

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        raise RuntimeError("index file vanished")


class SlowSearcher:
    name = "slow"
    description = "sleeps far past any deadline"

    def __init__(self) -> None:
        self.cancelled = 0

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


def reply(**fields: object) -> str:
    return json.dumps(fields)


def user_text(messages: list[BaseMessage]) -> str:
    return str(messages[-1].content)


# the answer step an open plan had before ``open_plan_answer="one_call"`` became the default
CHAIN = PlannerSettings(open_plan_answer="chain")


def agent_with(chat, searchers, planner: PlannerSettings | None = None, **budgets) -> HoptreeAgent:
    return HoptreeAgent(
        chat,
        {s.name: s for s in searchers},
        planner=planner or PlannerSettings(),
        budgets=BudgetSettings(**budgets),
        llm_timeout_s=5,
    )


def finding(passages_text: str, **by_query: tuple[str, str]) -> str:
    """A findings reply: for each query of the prompt whose text contains a key of
    ``by_query``, that (answer, passage title); other queries get no answer."""
    items = []
    blocks = passages_text.split("Query ")[1:]
    for block in blocks:
        number_text, rest = block.split(":", 1)
        query = rest.split("\n", 1)[0]
        for needle, (answer, title) in by_query.items():
            if needle in query:
                n = number(block, title) if title else 0
                items.append({"query": int(number_text), "answer": answer, "passages": [n]})
                break
        else:
            items.append({"query": int(number_text), "answer": "", "passages": []})
    return reply(findings=items)


def number_any(text: str, title: str) -> int:
    """The number of the passage titled ``title`` anywhere in a prompt."""
    for line in text.splitlines():
        if line.startswith("[") and "] " in line and line.split("] ", 1)[1].startswith(f"{title}:"):
            return int(line[1 : line.index("]")])
    raise AssertionError(f"{title} not in:\n{text}")


def number(block: str, title: str) -> int:
    return number_any(block, title)


def two_hop_chat(answer: str | None = None) -> RoutedChatModel:
    """The second query needs the first one's answer (#1): it waits, then goes out with
    "Paris" filled in. Every finding is a span of its passages, so no verify call is needed."""

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            Eiffel=("Paris", "Paris"),
            **{"through Paris": ("Seine", "Seine")},
        )

    def final(messages: list[BaseMessage]) -> str:
        text = user_text(messages)
        shown = {t for t in ("Paris", "Seine") if f"] {t}:" in text}
        paris, seine = (number_any(text, t) if t in shown else 1 for t in ("Paris", "Seine"))
        return answer or reply(
            short_answer="the Seine",
            answer=f"The Eiffel Tower stands in Paris [{paris}]. The Seine flows through "
            f"Paris [{seine}][9].",
        )

    return RoutedChatModel(
        routes={
            "decompose": reply(
                queries=["city where the Eiffel Tower stands", "river that flows through #1"]
            ),
            "summarize": summarize,
            "verify": reply(sufficient=False, queries=[]),
            "answer": final,
            # an open plan's one-call RAG reader (``searchers.reader``)
            "rag_answer": reply(answer="Seine"),
        }
    )


QUESTION = "Which river flows through the city where the Eiffel Tower stands?"


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


async def test_each_query_can_be_read_as_one_call_rag_reads_a_question(index) -> None:
    """``findings_call="reader"``: no findings call; each atomic query is asked alone with the
    reader's prompt over its own shown passages (one call per query), its span goes through
    the same support check, and the chain resolves as with the batched call. A span its
    passages do not hold is not a finding."""

    def reader(messages: list[BaseMessage]) -> str:
        question = user_text(messages).split("\n", 1)[0]
        if "Eiffel Tower stands" in question:
            return reply(answer="Paris")
        return reply(answer="Seine" if "through Paris" in question else "Loire")

    chat = two_hop_chat()
    chat.routes["rag_answer"] = reader
    planner = PlannerSettings(findings_call="reader")
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(QUESTION)
    assert [q.summary for q in result.sub_queries] == ["Paris", "Seine"]
    assert all(q.answered for q in result.sub_queries) and result.stopped == "sufficient"
    asked = [text for route, text in chat.seen if route == "rag_answer"]
    assert chat.count("summarize") == 0 and len(asked) == 2
    assert asked[0].startswith("Question: city where the Eiffel Tower stands\n")
    assert "] Paris:" in asked[0].split("Passages:")[1]  # its own windowed passages
    assert result.llm_calls == len(chat.seen) == 4  # decompose, two readers, answer
    assert result.usage_by_step["summarize"]["calls"] == 2

    # a reply its passages do not hold stays unsupported: the hop is open
    chat = two_hop_chat()
    chat.routes["rag_answer"] = lambda m: reply(answer="Loire")
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(QUESTION)
    assert not result.sub_queries[0].answered and result.sub_queries[0].proposed == "Loire"


async def test_the_answer_reads_the_findings_passages_first_with_notes(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    (prompt,) = [text for route, text in chat.seen if route == "answer"]
    notes, passages = prompt.split("Notes:")[1].split("Passages:")
    assert "- city where the Eiffel Tower stands: Paris" in notes
    assert "- river that flows through Paris: Seine" in notes
    lines = [line for line in passages.strip().splitlines() if line.startswith("[")]
    assert lines[0].startswith("[1] Paris:") and lines[1].startswith("[2] Seine:")
    assert len(lines) <= PlannerSettings().answer_sources
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
        planner=PlannerSettings(supplement=False),
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


async def test_the_budget_stops_a_model_that_never_says_sufficient(index) -> None:
    counter = iter(range(1000))

    def endless(messages: list[BaseMessage]) -> str:
        return reply(sufficient=False, queries=[f"another angle number {next(counter)} on Paris"])

    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Paris river"]),
            "summarize": lambda m: finding(user_text(m)),  # never finds anything
            "verify": endless,
            "rag_answer": reply(answer="Seine"),
        }
    )
    result = await agent_with(
        chat, [KeywordSearcher(index)], max_rounds=20, max_llm_calls=9, max_sub_queries=64
    ).ask("Which river flows through Paris?")
    assert result.stopped == "budget_llm_calls"
    assert result.llm_calls == len(chat.seen) <= 9  # a hard cap, the answer's call included
    assert result.degraded and "the LLM call budget ran out" in result.answer
    assert chat.count("rag_answer") == 1  # nothing found: one-call RAG's reader answers
    assert result.short_answer == "Seine"


class CallingSearcher(KeywordSearcher):
    """A searcher that asks the model on every search, as the LLM searchers do, with a budget
    of its own far above the question's."""

    def __init__(self, index, chat, calls: int) -> None:
        super().__init__(index, "calling")
        self.chat = chat
        self.calls = calls

    async def search(self, query: str, *, k: int = 10, scope=None) -> SearchResult:
        from pydantic import BaseModel

        from searchers.searcher import BudgetExceeded, SearchBudget
        from searchers.structured_calls import ask
        from searchers.verification import RuleKind  # noqa: F401  (the searchers' own module)

        class Keywords(BaseModel):
            query: str

        mine = SearchBudget(max_llm_calls=1000).scope(scope)
        for _ in range(self.calls):
            try:
                await ask(
                    self.chat,
                    Keywords,
                    prompts_render(query),
                    scope=mine,
                    step="sparse_rewrite",
                )
            except BudgetExceeded:
                break
        result = await super().search(query, k=k)
        result.llm_calls = mine.llm_calls
        return result


def prompts_render(query: str):
    import prompts

    return prompts.render("sparse_rewrite", query=query)


async def test_max_llm_calls_is_a_hard_cap_over_the_searchers_calls(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Eiffel Tower city", "Seine river", "Hobbit author"]),
            "rewrite": reply(query="Paris"),
            "summarize": lambda m: finding(user_text(m)),
            "verify": reply(sufficient=False, queries=["more"]),
            "rag_answer": reply(answer="Paris"),
        }
    )
    searcher = CallingSearcher(index, chat, calls=5)
    result = await agent_with(chat, [searcher], max_llm_calls=7).ask("Where is the tower?")
    # 1 decompose + 5 searcher calls fill the 6 the rounds may spend; the answer has its own
    assert result.llm_calls == len(chat.seen) == 7
    assert chat.count("rag_answer") == 1 and chat.count("summarize") == 0
    assert chat.count("rewrite") == 5


async def test_max_rounds_bounds_a_model_that_never_says_sufficient(index) -> None:
    counter = iter(range(1000))
    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Paris river"]),
            "summarize": lambda m: finding(user_text(m)),
            "verify": lambda m: reply(sufficient=False, queries=[f"angle {next(counter)} Seine"]),
            "answer": reply(short_answer="Seine", answer="The Seine [1]."),
        }
    )
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=3).ask("Paris river?")
    assert result.stopped == "max_rounds"
    assert len(result.verdicts) == 3
    assert chat.count("verify") == 2


async def test_duplicate_sub_queries_are_dropped(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": reply(
                queries=["Who wrote The Hobbit?", "who wrote the hobbit", "The Hobbit: who wrote?"]
            ),
            "summarize": lambda m: finding(user_text(m)),
            "verify": reply(
                sufficient=False, queries=["Hobbit wrote who", "  WHO wrote THE Hobbit  "]
            ),
            "answer": reply(short_answer="Tolkien", answer="J. R. R. Tolkien wrote it [1]."),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask("Who wrote The Hobbit?")
    assert [q.query for q in result.sub_queries] == ["Who wrote The Hobbit?"]
    assert searcher.queries == ["Who wrote The Hobbit?"]
    assert result.stopped == "no_new_queries"
    assert result.verdicts[-1]["follow_ups"] == []


async def test_a_searcher_that_raises_degrades_the_answer(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index), ExplodingSearcher()]).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert result.short_answer == "the Seine"
    failed = [s for q in result.sub_queries for s in q.searches if s["searcher"] == "exploding"]
    assert failed and all(s["stopped"] == "error" for s in failed)
    assert "index file vanished" in failed[0]["error"]
    assert any("exploding" in e and "vanished" in e for e in result.errors)
    # the answer says so in one line, and the result says why
    assert result.degraded and result.degraded_reasons == result.errors
    assert result.answer.splitlines()[-1].startswith("(Degraded answer: exploding on ")


async def test_a_hanging_searcher_is_cut_at_the_deadline(index) -> None:
    chat = two_hop_chat()
    slow = SlowSearcher()
    agent = agent_with(chat, [KeywordSearcher(index), slow], deadline_s=4.0, max_rounds=1)
    result = await agent.ask("Which river flows through the city where the Eiffel Tower stands?")
    assert slow.cancelled >= 1  # cut at the deadline, not waited out
    assert any("slow" in e and "deadline" in e for e in result.errors)
    # one round: the second hop never went out, and one-call RAG's reader answered
    assert result.short_answer == "Seine" and chat.count("rag_answer") == 1


async def test_unparseable_planner_output_falls_back_and_is_recorded(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": "Sure! Here are some queries: 1. Eiffel",
            "summarize": "{not json",
            "answer": reply(short_answer="unknown", answer="I could not find it."),
            "verify": reply(sufficient=False, queries=[]),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask("Where is the Eiffel Tower?")
    assert searcher.queries == ["Where is the Eiffel Tower?"]  # the question itself
    assert any(e.startswith("decompose:") for e in result.errors)
    assert any(e.startswith("summarize:") for e in result.errors)
    assert not result.sub_queries[0].answered
    assert result.short_answer == "unknown"


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


async def test_bad_questions_are_refused_before_any_call(index) -> None:
    chat = two_hop_chat()
    agent = agent_with(chat, [KeywordSearcher(index)])
    for bad in ("", "   \n\t ", "x" * 2001):
        with pytest.raises(QuestionError):
            await agent.ask(bad)
    assert chat.seen == []


async def test_closing_the_stream_cancels_the_run(index) -> None:
    slow = SlowSearcher()
    agent = agent_with(two_hop_chat(), [slow])
    stream = agent.stream("Which river flows through Paris?")
    kinds = []
    async for event in stream:
        kinds.append(event.kind)
        if event.kind == "decompose":
            break
    await asyncio.sleep(0.3)  # the run goes on in its own task: the search starts and hangs
    await stream.aclose()
    for _ in range(50):
        if slow.cancelled:
            break
        await asyncio.sleep(0.05)
    assert slow.cancelled >= 1
    assert kinds == ["started", "decompose"]


async def test_a_thread_remembers_the_previous_question(index, tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    chat = two_hop_chat()
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        agent = HoptreeAgent(
            chat, {"keywords": KeywordSearcher(index)}, checkpointer=saver, llm_timeout_s=5
        )
        first = await agent.ask("Which river flows through Paris?", thread_id="t1")
        second = await agent.ask("How long is it?", thread_id="t1")
        other = await agent.ask("How long is it?", thread_id="t2")
    decompose_prompts = [text for route, text in chat.seen if route == "decompose"]
    assert "Which river flows through Paris?" not in decompose_prompts[0].split("Question:")[0]
    assert "Q: Which river flows through Paris? A: the Seine" in decompose_prompts[1]
    assert "Earlier in this conversation" not in decompose_prompts[2]
    # per-question state starts clean on the same thread
    assert [q.id for q in second.sub_queries] == [q.id for q in first.sub_queries]
    assert second.thread_id == "t1" and other.thread_id == "t2"


def ablated(chat, index, **switches) -> HoptreeAgent:
    return HoptreeAgent(
        chat,
        {"keywords": KeywordSearcher(index)},
        planner=PlannerSettings(**switches),
        budgets=BudgetSettings(),
        llm_timeout_s=5,
    )


async def test_no_decompose_searches_the_question_itself(index) -> None:
    chat = two_hop_chat()
    result = await ablated(chat, index, decompose=False).ask("Where does the Seine flow?")
    assert chat.count("decompose") == 0
    assert result.sub_queries[0].query == "Where does the Seine flow?"


async def test_no_supplement_runs_the_plan_and_asks_no_follow_up(index) -> None:
    chat = two_hop_chat()
    chat.routes["summarize"] = lambda m: finding(user_text(m), Eiffel=("Paris", "Paris"))
    result = await ablated(chat, index, supplement=False).ask(QUESTION)
    # the planned hop still runs (it is part of the plan); the open query gets no follow-up
    assert [q.round for q in result.sub_queries] == [1, 2]
    assert chat.count("verify") == 0
    assert result.stopped == "no_supplement" and len(result.sub_queries) == 2


async def test_no_summarize_hands_the_fused_passages_to_the_answer(index) -> None:
    chat = two_hop_chat()
    result = await ablated(chat, index, summarize=False, supplement=False).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert chat.count("summarize") == 0
    assert all(q.summary_skipped and q.summary_sources for q in result.sub_queries)
    # with no answers to fill in, a dependent query goes out at once with #1 spelled out
    assert [q.round for q in result.sub_queries] == [1, 1]
    assert result.sub_queries[1].query == (
        "river that flows through (city where the Eiffel Tower stands)"
    )
    (answer_prompt,) = [text for route, text in chat.seen if route == "answer"]
    titles = {
        json.loads(line)["id"]: json.loads(line)["title"]
        for line in DATA.read_text().split("\n")
        if line.strip()
    }
    for sub in result.sub_queries:  # each query's best passage is shown to the answer step
        assert f"{titles[sub.summary_sources[0]]}:" in answer_prompt
    assert "Notes:\n(none)" in answer_prompt


async def test_no_summarize_lets_verify_read_the_fused_passages(index) -> None:
    """The ablation removes the condensing, not the evidence: verify must not judge blind."""
    chat = two_hop_chat()
    result = await ablated(chat, index, summarize=False).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    (verify_prompt,) = [text for route, text in chat.seen if route == "verify"]
    findings = verify_prompt.split("Findings:")[1]
    for sub in result.sub_queries:
        assert f"- {sub.query} -> passages:" in findings
    # the Paris passage shown under the first query, trimmed to the planner's passage size
    shown = [line for line in findings.splitlines() if line.startswith("    ")]
    assert shown and all(len(line) < 4 + 200 + PlannerSettings().passage_chars for line in shown)
    assert any("Eiffel" in line for line in shown)


def test_the_planner_runs_lighter_searches_than_hoptree_search(settings) -> None:
    from agent.hoptree_agent import planner_search_context
    from agent.searching import searcher_options
    from searchers.registry import SearcherContext
    from searchers.searcher import SearchBudget
    from searchers.sparse_searcher import SparseSearcherConfig

    base = SearcherContext(chat=RoutedChatModel(), options=searcher_options(settings))
    base = SearcherContext(chat=base.chat, options=base.options, budget=SearchBudget(30))
    planned = planner_search_context(settings, base)
    sparse = SparseSearcherConfig(**planned.options["sparse"])
    assert (sparse.max_depth, sparse.max_refinements) == (1, 1)
    assert sparse.original_first  # the query as written first: no call when it verifies
    assert sparse.rule.kind == "coverage"  # the stop rule is the searchers' own
    assert planned.options["dense"]["max_rewrites"] == 1
    assert planned.options["dense"]["original_first"]
    assert planned.budget.max_llm_calls == 1
    assert SparseSearcherConfig(**base.options["sparse"]).max_depth == 3  # untouched


def test_each_enabled_searcher_is_a_node_of_the_graph(index) -> None:
    agent = agent_with(two_hop_chat(), [KeywordSearcher(index), ExplodingSearcher()])
    nodes = set(agent._graph.get_graph().nodes)
    assert {"search_keywords", "search_exploding", "findings", "verify"} <= nodes


def test_planned_queries_off_the_question_are_dropped_and_placeholders_filled() -> None:
    from agent.planner.queries import on_topic
    from agent.planner.state import query_key

    def plan(*queries: str) -> list[tuple[str, str]]:
        return [(q, query_key(q)) for q in queries]

    question = "Who was born first, Ada Lovelace or Alan Turing?"
    kept = on_topic(plan("birth date of Y", "birth date of Z"), question)
    assert [q for q, _ in kept] == ["birth date of Ada Lovelace", "birth date of Alan Turing"]
    question = "Which river flows through the city where the Eiffel Tower stands?"
    kept = on_topic(
        plan("director of X", "country of #1", "city of the Eiffel Tower", "river of #3"),
        question,
    )
    # the copied pattern and the query built on it go; the kept reference is renumbered
    assert [q for q, _ in kept] == ["city of the Eiffel Tower", "river of #1"]


def test_a_planned_query_naming_an_example_name_is_dropped() -> None:
    """The 1.5B planner copied a made-up name of its examples into a real plan (MuSiQue
    tuning: "county where the composer of Silver Tide ..."); such a query, and any query
    built on it, is not searched, while the same word named by the question stays."""
    from agent.planner.queries import on_topic
    from agent.planner.shapes import example_names
    from agent.planner.state import query_key

    assert {"Silver", "Tides", "Elvard"} <= example_names()
    question = "Which county borders the capital of the state where Johnson Hagood was born?"
    plan = ["state where Johnson Hagood was born", "county where the composer of Silver Tide "
            "was born", "capital of #1", "county that borders #3"]  # fmt: skip
    kept = on_topic([(q, query_key(q)) for q in plan], question)
    assert [q for q, _ in kept] == [
        "state where Johnson Hagood was born",
        "capital of #1",
        "county that borders #2",
    ]
    question = "Who directed the film Silver Tides of Harbrook?"
    query = "director of Silver Tides of Harbrook"
    kept = on_topic([(query, query_key(query))], question)
    assert [q for q, _ in kept] == ["director of Silver Tides of Harbrook"]


def test_a_hop_that_asks_when_for_a_question_that_asks_where_asks_for_the_place() -> None:
    """The prompt's "birth year of #1", copied into questions about a place (2Wiki, v3)."""
    from agent.planner.queries import on_topic
    from agent.planner.state import query_key

    def plan(*queries: str) -> list[str]:
        pairs = [(q, query_key(q)) for q in queries]
        return [q for q, _ in on_topic(pairs, question)]

    question = "Where was the director of film Harbour Lights born?"
    assert plan("director of film Harbour Lights", "birth date of #1") == [
        "director of film Harbour Lights",
        "birth place of #1",
    ]
    question = "What is the place of death of the director of film Harbour Lights?"
    assert plan("director of film Harbour Lights", "death year of #1")[1] == "death place of #1"
    # a question that asks when, or says "where" in a clause, keeps its dates
    question = "When was the director of film Harbour Lights born?"
    assert plan("director of film Harbour Lights", "birth date of #1")[1] == "birth date of #1"
    question = "In what year was the club founded in the town where Harbour Lights was shot?"
    assert plan("town where Harbour Lights was shot", "founding year of club in #1")[1] == (
        "founding year of club in #1"
    )


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


def test_a_query_that_repeats_an_earlier_one_builds_on_its_answer() -> None:
    from agent.planner.queries import implicit_refs

    earlier = ["origin of the song Alone", "town where 'Coffee Alone' comes from"]
    query = 'river next to the town where "Coffee Alone" comes from'
    assert implicit_refs(query, earlier) == "river next to the #2"
    # a query that is only the earlier one, or shorter than three words, is left alone
    assert implicit_refs("town where Coffee Alone comes from", earlier[1:]) == (
        "town where Coffee Alone comes from"
    )
    assert implicit_refs("birth date of Ada", ["of Ada"]) == "birth date of Ada"


def test_the_progress_line_counts_the_queries_that_wait() -> None:
    from agent.results import TraceEvent
    from agent.trace_lines import progress_line

    event = TraceEvent(
        "decompose",
        {
            "sub_queries": [{"id": "q1", "query": "city of the Eiffel Tower"}],
            "waiting": [{"id": "q2", "query": "river of #1", "needs": ["q1"]}],
        },
    )
    assert progress_line(event) == (
        "planned 2 atomic queries (1 wait for an earlier answer): "
        "city of the Eiffel Tower; river of #1"
    )
    event.data["shape"] = "bridge_comparison"
    assert progress_line(event).startswith("planned 2 atomic queries (1 wait for an earlier "
                                           "answer) [bridge comparison]: city")  # fmt: skip
    answered = TraceEvent("answer", {"check": {"sentences": 1, "kept": 1, "chain_end": "Seine"}})
    assert progress_line(answered).endswith("; the chain ends at 'Seine'")


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


async def test_a_planned_hop_is_not_held_back_by_the_query_budget(index) -> None:
    """The waiting query was counted when it was planned: sending it adds no query."""
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index)], max_sub_queries=2).ask(QUESTION)
    assert [q.round for q in result.sub_queries] == [1, 2]
    assert result.stopped == "sufficient"


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


async def test_an_open_chain_is_read_hop_by_hop(index) -> None:
    """With ``open_plan_answer="chain"`` an open plan with a supported finding reads its chain
    the way the oracle does: the first passages of each searched query in plan order, then the
    question's own retrieval."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [2]."))

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(user_text(messages), Eiffel=("Paris", "Paris"))

    chat.routes["summarize"] = summarize
    result = await agent_with(chat, [KeywordSearcher(index)], CHAIN, max_rounds=1).ask(QUESTION)
    hops = [sub.passage_ids[:2] for sub in result.sub_queries]
    expected = list(dict.fromkeys(pid for ids in hops for pid in ids))
    assert len(expected) >= 3  # both hops searched and found passages
    assert [s["id"] for s in result.sources][: len(expected)] == expected[:5]


async def test_the_reader_is_told_which_step_of_an_open_chain_is_still_open(index) -> None:
    """The first hop found Paris, the last hop found nothing: with ``open_plan_answer="chain"``
    the answer prompt names the last hop, with Paris filled in, as the step the short answer
    must answer (not the bridge)."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [2]."))

    def summarize(messages: list[BaseMessage]) -> str:
        return finding(user_text(messages), Eiffel=("Paris", "Paris"))

    chat.routes["summarize"] = summarize
    result = await agent_with(chat, [KeywordSearcher(index)], CHAIN, max_rounds=1).ask(QUESTION)
    (prompt,) = [text for route, text in chat.seen if route == "answer"]
    assert (
        'Still open: the notes answer every step but the last, "river that flows through '
        'Paris"' in prompt
    )
    check = next(e for e in result.trace if e.kind == "answer").data["check"]
    assert check["open_step"] == "river that flows through Paris"


async def test_a_resolved_chain_names_no_open_step(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    (prompt,) = [text for route, text in chat.seen if route == "answer"]
    assert "Still open" not in prompt
    assert "open_step" not in next(e for e in result.trace if e.kind == "answer").data["check"]


async def test_the_decompose_prompt_shows_plans_of_the_questions_shape(index) -> None:
    chat = two_hop_chat()
    planned = chat.routes["decompose"]
    systems: list[str] = []

    def decompose(messages: list[BaseMessage]) -> str:
        systems.append(str(messages[0].content))
        return str(planned)

    chat.routes["decompose"] = decompose
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    decompose_event = next(e for e in result.trace if e.kind == "decompose")
    assert decompose_event.data["shape"] == "composition"
    [system] = systems
    assert "a chain:" in system and "place of birth of #1" in system
    assert "a comparison" not in system  # only the question's own shape is shown


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


def test_a_bare_noun_is_no_query() -> None:
    from agent.planner.queries import clean_queries, generic, on_topic

    assert generic("city") and generic("the capitol")
    assert not generic("Paris") and not generic("capital of France") and not generic("1937")
    question = "In which county is the city sharing a border with the capital of Arlen?"
    planned = ["city", "capital of Arlen", "county of #2"]
    kept = on_topic(clean_queries(planned, set(), 6), question)
    assert [q for q, _ in kept] == ["capital of Arlen", "county of #1"]


def test_a_query_names_something_by_a_name_number_quote_or_reference() -> None:
    from agent.planner.queries import names_nothing

    question = 'Which river flows next to the German town where "Coffee Alone" originates from?'
    for fragment in ("originates from", "river that flows next to", "year of the player's award"):
        assert names_nothing(fragment, question)
    for named in ("German town", "river next to #2", "'Coffee Alone' origin", "town in 1921"):
        assert not names_nothing(named, question)
    # a question in lower case gives nothing to judge by
    assert not names_nothing("group of scientists", "who discovered nuclear fission first?")


def test_a_hop_whose_relation_the_question_never_asks_is_dropped() -> None:
    from agent.planner.queries import clean_queries, on_topic, relation_in_question

    question = "In which country is the province where Serbian is official?"
    planned = ["province where Serbian is official", "country of #1", "capital of #2"]
    kept = on_topic(clean_queries(planned, set(), 6), question)
    assert [q for q, _ in kept] == ["province where Serbian is official", "country of #1"]
    assert relation_in_question("place of birth of #1", "Where was the wife of Tom Arlen born?")
    assert relation_in_question("date of death of #1", "When did the father of Ann Lee die?")
    assert relation_in_question("spouse of #1", "Who married the narrator of Harbour Lights?")


async def test_a_chain_question_planned_as_one_query_keeps_the_wide_context(index) -> None:
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [2]."))
    chat.routes["decompose"] = reply(queries=["city where the Eiffel Tower stands"])
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    check = next(e for e in result.trace if e.kind == "answer").data["check"]
    assert check["plan_resolved"] is True  # its one query was answered ...
    assert len(result.sources) > 2  # ... but one query does not cover a chain question


class ChargingSearcher(KeywordSearcher):
    """Asks its scope for one LLM call per search (as a rewrite would), and records whether
    the planner's budget allowed it."""

    def __init__(self, index: TantivySparseIndex) -> None:
        super().__init__(index, name="charging")
        self.allowed: dict[str, bool] = {}

    async def search(self, query: str, *, k: int = 10, scope=None) -> SearchResult:
        from searchers.searcher import BudgetExceeded, SearchBudget

        try:
            SearchBudget(max_llm_calls=5).scope(scope).charge()
            self.allowed[query] = True
        except BudgetExceeded:
            self.allowed[query] = False
        return await super().search(query, k=k)


async def test_the_question_is_searched_as_written_with_no_llm_call(index) -> None:
    """Beside the plan, the question itself goes to every searcher with an allowance of no
    LLM call: its as-written retrieval is one-call RAG's, and costs nothing of the budget."""
    chat = two_hop_chat()
    searcher = ChargingSearcher(index)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    assert searcher.allowed == {
        "city where the Eiffel Tower stands": True,
        QUESTION: False,
        "river that flows through Paris": True,
    }
    assert QUESTION not in [q.query for q in result.sub_queries]  # no finding is asked of it


async def test_an_open_plan_falls_back_on_the_questions_own_passages(index) -> None:
    """The plan asked about the wrong thing and found nothing: the answer reads what the
    question itself retrieved, as one-call RAG would."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["decompose"] = reply(queries=["length of the river Danube"])
    chat.routes["summarize"] = lambda m: finding(user_text(m))
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=1).ask(
        "Which river flows through Paris?"
    )
    no_search = PlannerSettings(question_search=False)
    agent = HoptreeAgent(
        chat, {"keywords": KeywordSearcher(index)}, planner=no_search,
        budgets=BudgetSettings(max_rounds=1), llm_timeout_s=5,
    )  # fmt: skip
    without = await agent.ask("Which river flows through Paris?")
    planned_hits = {h.id for h in index.retrieve("length of the river Danube", 10)}
    assert {s["id"] for s in without.sources} <= planned_hits  # only what the plan found
    question_top = [h.id for h in index.retrieve("Which river flows through Paris?", 2)]
    assert [s["id"] for s in result.sources][:2] == question_top


async def test_the_questions_own_hits_can_lead_an_open_plans_passages(index) -> None:
    """``question_hits_first``: an open plan answered along its chain (its second hop found
    nothing) reads the question's own first hits ahead of its hop passages; without it its
    first hop's passage leads."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    chat.routes["summarize"] = lambda m: finding(user_text(m), Eiffel=("Paris", "Paris"))
    question_top = [h.id for h in index.retrieve(QUESTION, 2)]
    hop_top = index.retrieve("city where the Eiffel Tower stands", 1)[0].id
    budgets = BudgetSettings(max_rounds=2)

    async def sources(planner: PlannerSettings) -> list[str]:
        agent = HoptreeAgent(
            chat, {"keywords": KeywordSearcher(index)}, planner=planner, budgets=budgets,
            llm_timeout_s=5,
        )  # fmt: skip
        result = await agent.ask(QUESTION)
        assert not result.sub_queries[1].answered  # the plan stayed open
        return [s["id"] for s in result.sources]

    assert (await sources(CHAIN))[0] == hop_top
    led = await sources(PlannerSettings(open_plan_answer="chain", question_hits_first=2))
    assert led[:2] == question_top and hop_top in led and len(led) <= 5


async def test_an_open_plan_can_be_answered_as_one_call_rag(index) -> None:
    """``open_plan_answer="one_call"`` (the default): a plan that did not resolve is answered
    by one-call RAG's reader (``prompts/rag_answer.txt``) over the question's own hits alone,
    with no notes and no open step, and its long answer is the shown sentence that holds the
    short one, cited; with "chain" the planner's answer prompt reads its hop passages with its
    findings as notes, with "hops" the same passages and no notes."""
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

    chained, route, prompt, result = await run(CHAIN)
    assert route == "answer" and ": Paris" in prompt.split("Passages:")[0]
    assert chained != question_top and "answered_as" not in result.citation_check
    hops, route, prompt, result = await run(PlannerSettings(open_plan_answer="hops"))
    assert hops == chained and "Notes:\n(none)" in prompt
    assert route == "answer" and result.citation_check["answered_as"] == "hops"
    ids, route, prompt, result = await run(PlannerSettings(answer_sources=3))
    assert ids == question_top and route == "rag_answer"
    head = prompt.split("Passages:")[0]  # no finding, no open step above the passages
    assert "Notes:" not in head and "Still open" not in head and "Paris" not in head
    check = result.citation_check
    assert check["answered_as"] == "one_call" and not check["plan_resolved"]
    # no shown passage holds the scripted reader's "Seine": no sentence to cite
    assert result.short_answer == "Seine" and result.answer == "Seine." and not result.citations
    assert not check["short_answer_grounded"]
    chat.routes["rag_answer"] = reply(answer="Danube")
    ids, route, prompt, result = await run(PlannerSettings(answer_sources=3))
    sentence, cited = result.answer.rsplit(" [", 1)
    [citation] = result.citations
    assert "Danube" in sentence and sentence in " ".join(citation.text.split())
    assert cited == f"{ids.index(citation.id) + 1}]."


async def test_an_open_plan_can_read_its_supported_findings_first(index) -> None:
    """``open_plan_answer="findings_first"``: the same one-call reader, over the passage that
    supports each supported finding (the hop that resolved) ahead of the question's own hits,
    within ``answer_sources``, still with no notes; the row says which way it was answered."""
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="The Seine flows [1]."))
    # the first hop's finding is read from the Seine's passage ("It flows through Paris"),
    # which is not among the question's first hits; the second hop finds nothing
    chat.routes["decompose"] = reply(
        queries=["city the Seine river flows through", "tower that stands in #1"]
    )
    chat.routes["summarize"] = lambda m: finding(user_text(m), Seine=("Paris", "Seine"))
    question_top = [h.id for h in index.retrieve(QUESTION, 3)]
    agent = HoptreeAgent(
        chat, {"keywords": KeywordSearcher(index)},
        planner=PlannerSettings(open_plan_answer="findings_first", answer_sources=3),
        budgets=BudgetSettings(max_rounds=2), llm_timeout_s=5,
    )  # fmt: skip
    result = await agent.ask(QUESTION)
    first, second = result.sub_queries[:2]
    assert first.answered and not second.answered  # the plan stayed open after one hop
    ids = [s["id"] for s in result.sources]
    assert result.sources[0]["title"] == "Seine" and ids[0] == first.summary_sources[0]
    assert ids == list(dict.fromkeys([first.summary_sources[0], *question_top]))[:3]
    assert ids != question_top  # the hop's passage is not one of the question's first hits
    [(route, prompt)] = [(r, t) for r, t in chat.seen if r in ("answer", "rag_answer")]
    assert route == "rag_answer" and "Notes:" not in prompt.split("Passages:")[0]
    assert result.citation_check["answered_as"] == "findings_first"


async def test_a_resolved_plan_reads_the_questions_first_hits_after_its_findings(index) -> None:
    """A resolved plan reads its findings' passages; with ``question_hits_first`` the
    question's own first hits follow them, within ``answer_sources``."""
    question_top = [h.id for h in index.retrieve(QUESTION, 3)]

    async def sources(planner: PlannerSettings) -> list[str]:
        agent = HoptreeAgent(
            two_hop_chat(), {"keywords": KeywordSearcher(index)}, planner=planner,
            budgets=BudgetSettings(), llm_timeout_s=5,
        )  # fmt: skip
        result = await agent.ask(QUESTION)
        assert all(q.answered for q in result.sub_queries)  # resolved: Paris, then the Seine
        return [s["id"] for s in result.sources]

    narrow = await sources(PlannerSettings())
    wide = await sources(PlannerSettings(question_hits_first=3, answer_sources=4))
    assert wide[: len(narrow)] == narrow  # the findings' passages still lead
    expected = list(dict.fromkeys([*narrow, *question_top]))[:4]
    assert wide == expected and len(wide) > len(narrow)


class ReportingSearcher(KeywordSearcher):
    """A plugin written before run scopes: ``search(query, *, k)``, no scope to charge, its
    model called its own way and the calls reported in its result."""

    def __init__(self, index: TantivySparseIndex, calls: int) -> None:
        super().__init__(index, "reporting")
        self.calls = calls

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        result = await super().search(query, k=k)
        result.llm_calls = self.calls
        return result


async def test_an_old_plugins_calls_are_counted_after_its_search(index) -> None:
    chat = two_hop_chat()
    searcher = ReportingSearcher(index, calls=2)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    assert searcher.queries  # called the old way, without a scope
    assert result.llm_calls == len(chat.seen) + 2 * len(searcher.queries)
    assert result.short_answer == "the Seine"


async def test_the_answer_keeps_its_call_when_the_searches_spent_the_rounds(index) -> None:
    """An old plugin's reported calls spend the rounds' scope: no findings call is made, and
    the answer still has the call kept for it."""
    chat = two_hop_chat()
    searcher = ReportingSearcher(index, calls=20)
    result = await agent_with(chat, [searcher], max_llm_calls=6).ask(QUESTION)
    assert chat.count("decompose") == 1 and chat.count("summarize") == 0
    assert chat.count("rag_answer") == 1  # nothing found: one-call RAG's reader answers
    assert result.llm_calls == len(chat.seen) + 20 * len(searcher.queries)
    assert result.stopped == "budget_llm_calls"


def test_a_bare_name_in_the_plan_goes_into_the_hops_that_build_on_it() -> None:
    from agent.planner.queries import clean_queries, inline_bare_names

    question = "When did Frances Varn, Marchioness Of Kessel's father die?"
    planned = ["frances varn, marchioness of kessel", "father of #1", "date of death of #2"]
    assert [q for q, _ in inline_bare_names(clean_queries(planned, set(), 6), question)] == [
        "father of Frances Varn, Marchioness Of Kessel",
        "date of death of #1",
    ]
    # a description is not a bare name, and a name nothing builds on is left alone
    chain = ["city where the Eiffel Tower stands", "river that flows through #1"]
    pairs = clean_queries(chain, set(), 6)
    assert inline_bare_names(pairs, QUESTION) == pairs
    alone = clean_queries(["Robocalypse", "director of Robocalypse"], set(), 6)
    assert inline_bare_names(alone, "Who directed Robocalypse?") == alone


async def test_the_hop_after_a_bare_name_is_searched_by_the_name(index) -> None:
    chat = two_hop_chat()
    chat.routes["decompose"] = reply(
        queries=["Eiffel Tower", "city where #1 stands", "river that flows through #2"]
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    assert [q.query for q in result.sub_queries] == [
        "city where Eiffel Tower stands",
        "river that flows through Paris",
    ]
    assert "Eiffel Tower" not in searcher.queries
    assert result.stopped == "sufficient" and "Seine" in result.short_answer


def test_what_a_finding_fills_into_the_hop_that_needs_it() -> None:
    from agent.planner.queries import fill_value

    # a name with its titles goes in whole; a trailing aside (dates, places) does not
    long_name = "Louis Philippe Marie Alexandre Varn, 3rd Prince of Kessel"
    assert fill_value(long_name) == long_name
    assert fill_value("Jorgen Smit (July 21, 1916 in Bergen – May 10, 1991)") == "Jorgen Smit"
    # a yes/no or a sentence is not a name to search by
    assert fill_value("yes") == ""
    assert fill_value("he was the son of a farmer who moved to the city of Bergen in 1901") == ""


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
