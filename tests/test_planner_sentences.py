"""``PlannerSettings.findings_call="sentences"`` (``searchers.hop_sentences``): the findings
step's reader is shown only the sentences of a query's passages nearest the query by
embedding, each under its passage's title; the span it reads is still checked against the whole
passage. Through the planner graph with a scripted model and a small deterministic embedding,
on, off, and without an index's embeddings."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.settings import BudgetSettings, PlannerSettings
from searchers.hop_sentences import nearest_sentences
from searchers.passages import Hit, Passage
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    KeywordSearcher,
    WordEmbeddings,
    reply,
    tiny_index,
    user_text,
)
from tests.routed_chat import RoutedChatModel

ROWS = [
    ("p1", "Luke Bryan", "Luke Bryan is a singer from Georgia. Bryan was born in Leesburg. "
     "Luke Bryan is married to Caroline Boyer. His song Country Man was released in 2007."),
    ("p2", "Country Man", "Country Man is a song performed by Luke Bryan, who wrote it with "
     "Jeff Stevens and Jody Stevens."),
]  # fmt: skip
QUESTION = "Who is the spouse of Luke Bryan?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return tiny_index(tmp_path_factory, "sentences", ROWS)


def scripted() -> RoutedChatModel:
    def read(messages: list[BaseMessage]) -> str:
        text = user_text(messages)
        # a reader that copies the first name it sees after "married to", else the birthplace
        return reply(answer="Caroline Boyer" if "married to" in text else "Leesburg")

    return RoutedChatModel(
        routes={
            "decompose": reply(queries=["spouse of Luke Bryan"]),
            "rag_answer": read,
            "verify": reply(sufficient=True, queries=[]),
            "answer": reply(short_answer="Caroline Boyer",
                            answer="Luke Bryan is married to Caroline Boyer [1]."),
        }
    )  # fmt: skip


def ask(index: TantivySparseIndex, findings_call: str, embeddings: Embeddings | None):
    chat = scripted()
    agent = HoptreeAgent(
        chat,
        {"keywords": KeywordSearcher(index)},
        planner=PlannerSettings(draft=False, findings_call=findings_call),
        budgets=BudgetSettings(),
        llm_timeout_s=5,
        embeddings=embeddings,
    )
    result = asyncio.run(agent.ask(QUESTION))
    reads = [text for route, text in chat.seen if route == "rag_answer"]
    return result, reads


def test_the_reader_sees_the_nearest_sentences_alone(index: TantivySparseIndex) -> None:
    result, reads = ask(index, "sentences", WordEmbeddings())
    finding_read = reads[0]
    assert "Luke Bryan is married to Caroline Boyer." in finding_read
    assert "Leesburg" not in finding_read and "Jody Stevens" not in finding_read
    (sub,) = result.sub_queries
    # the span is held by the whole passage the sentence came from: supported, cited as p1
    assert sub.summary == "Caroline Boyer" and sub.answered and sub.summary_sources == ["p1"]


def test_switched_off_the_reader_sees_the_windowed_passages(index: TantivySparseIndex) -> None:
    result, reads = ask(index, "reader", WordEmbeddings())
    assert "Jody Stevens" in reads[0]  # the other passage is shown too
    result_none, reads_none = ask(index, "sentences", None)  # no embeddings: as "reader"
    assert reads_none[0] == reads[0]
    assert result_none.sub_queries[0].summary == result.sub_queries[0].summary


def test_nearest_sentences_keep_their_passage() -> None:
    hits = [Hit(Passage(pid, title, text, {"page": 3}), 1.0, "kw") for pid, title, text in ROWS]
    chosen = asyncio.run(nearest_sentences("Who was Luke Bryan's wife?", hits, WordEmbeddings(), 1))
    (one,) = chosen
    assert one.text == "Luke Bryan is married to Caroline Boyer."
    assert (one.id, one.title, one.passage.metadata, one.retriever) == (
        "p1",
        "Luke Bryan",
        {"page": 3},
        "kw",
    )
    # nothing to split, or no sentence asked for: the hits as they were
    empty = [Hit(Passage("p0", "Empty", "", {}), 1.0)]
    assert asyncio.run(nearest_sentences("spouse", empty, WordEmbeddings())) == empty
    assert asyncio.run(nearest_sentences("spouse", hits, WordEmbeddings(), 0)) == hits


def test_the_lead_sentence_of_the_nearest_passage_comes_along() -> None:
    hits = [Hit(Passage(pid, title, text, {}), 1.0) for pid, title, text in ROWS]
    plain = asyncio.run(nearest_sentences("spouse of Luke Bryan", hits, WordEmbeddings(), 1))
    led = asyncio.run(
        nearest_sentences("spouse of Luke Bryan", hits, WordEmbeddings(), 1, lead=True)
    )
    assert [h.text for h in plain] == ["Luke Bryan is married to Caroline Boyer."]
    assert [h.text for h in led] == [
        "Luke Bryan is married to Caroline Boyer.",
        "Luke Bryan is a singer from Georgia.",
    ]
    # a lead sentence already chosen is not shown twice
    singer = asyncio.run(nearest_sentences("singer", hits, WordEmbeddings(), 1, lead=True))
    assert [h.text for h in singer] == ["Luke Bryan is a singer from Georgia."]
