"""The cited answer's shapes on every way out: a passage's id, title, text, url and page reach
``AskResult.to_json()`` (what ``POST /v1/ask``, the stream's ``result`` event and
``hoptree ask --json`` print), the OpenAI chat answer's "Sources:" list and ``hoptree`` extras,
the MCP ``ask`` tool's output and its schema, and the evaluation rows, with exactly these keys
and values. The planner is the routed two-hop script over real tantivy; the index's passages
carry a PDF page and a url in their metadata, as documents and web pages do."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import BaseMessage

from agent.hoptree_agent import HoptreeAgent
from agent.results import AskResult
from agent.serve.mcp_schemas import AskOutput, ask_output
from agent.serve.openai_api import chat_content, hoptree_extra
from agent.serve.runs import result_from_json
from agent.settings import BudgetSettings, PlannerSettings
from evals.pipelines import planner_context, planner_record
from searchers.passages import Passage
from searchers.sparse_tantivy import TantivySparseIndex
from tests.locations import TESTS
from tests.planner_scripts import QUESTION, KeywordSearcher, reply, two_hop_chat
from tests.routed_chat import RoutedChatModel

DATA = TESTS / "data" / "passages.jsonl"
METADATA = {
    "paris": {"page": 7, "format": "pdf"},
    "seine": {"url": "https://example.org/seine", "kind": "river"},
}
PARIS = (
    "Paris is the capital and most populous city of France. The Eiffel Tower stands on the "
    "Champ de Mars in Paris."
)
SEINE = (
    "The Seine is a river in northern France. It flows through Paris and into the English "
    "Channel at Le Havre."
)
CITATIONS = [
    {"n": 1, "id": "paris", "title": "Paris", "text": PARIS, "url": None, "page": 7},
    {
        "n": 2,
        "id": "seine",
        "title": "Seine",
        "text": SEINE,
        "url": "https://example.org/seine",
        "page": None,
    },
]
ANSWER = "The Eiffel Tower stands in Paris [1]. The Seine flows through Paris [2]."


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    idx = TantivySparseIndex.create(tmp_path_factory.mktemp("shapes") / "sparse")
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    idx.add(
        [
            Passage(r["id"], r["title"], r["text"], METADATA.get(r["id"], r.get("metadata") or {}))
            for r in rows
        ]
    )
    return idx


async def ask(index: TantivySparseIndex, chat: RoutedChatModel, **planner: int) -> AskResult:
    agent = HoptreeAgent(
        chat,
        {"keywords": KeywordSearcher(index)},
        planner=PlannerSettings(
            **{"draft": False, "supplement": True, "findings_call": "batched", **planner}
        ),
        budgets=BudgetSettings(),
        llm_timeout_s=5,
    )
    return await agent.ask(QUESTION)


async def test_the_cited_answer_keeps_its_shape_on_every_way_out(index) -> None:
    result = await ask(index, two_hop_chat())
    data = result.to_json(with_trace=False)
    assert (data["short_answer"], data["answer"]) == ("the Seine", ANSWER)
    assert data["citations"] == CITATIONS
    assert [list(s) for s in data["sources"]] == [["n", "id", "title", "text", "shown"]] * 2
    assert data["sources"] == [
        {"n": 1, "id": "paris", "title": "Paris", "text": PARIS, "shown": PARIS},
        {"n": 2, "id": "seine", "title": "Seine", "text": SEINE, "shown": SEINE},
    ]
    assert [c.label for c in result.citations] == ["Paris p. 7", "Seine"]
    # the OpenAI-compatible answer: the "Sources:" list and the ``hoptree`` extras
    assert chat_content(result) == (
        f"{ANSWER}\n\nSources:\n[1] Paris p. 7 (paris)\n[2] Seine <https://example.org/seine>"
    )
    assert hoptree_extra(result)["citations"] == CITATIONS
    # a result read back from the stream's ``result`` event (an agent without ``run``)
    assert [c.to_json() for c in result_from_json(data).citations] == CITATIONS
    # MCP: the citations without their text (read_passage fetches it), and the schema
    assert ask_output(result).model_dump(mode="json")["citations"] == [
        {k: v for k, v in c.items() if k != "text"} for c in CITATIONS
    ]
    assert AskOutput.model_json_schema()["$defs"]["CitationOut"] == {
        "properties": {
            "n": {
                "description": "the [n] mark in the cited answer",
                "title": "N",
                "type": "integer",
            },
            "id": {
                "description": "passage id: read it with read_passage",
                "title": "Id",
                "type": "string",
            },
            "title": {"title": "Title", "type": "string"},
            "url": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "title": "Url",
            },
            "page": {
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "default": None,
                "description": "the PDF page the passage is from",
                "title": "Page",
            },
        },
        "required": ["n", "id", "title"],
        "title": "CitationOut",
        "type": "object",
    }
    # the evaluation row's record of what the answer step read
    assert planner_record(result)["sources"] == ["Paris", "Seine"]
    contexts, _ = planner_context(
        result, PlannerSettings(draft=False, supplement=True, findings_call="batched")
    )
    assert contexts[-2:] == [PARIS, SEINE]


async def test_a_shown_passage_is_trimmed_and_its_citation_keeps_the_whole_text(index) -> None:
    """The prompt shows each passage trimmed around the question, and the citation check reads
    it so; the result's sources keep both texts, a citation the whole passage."""
    result = await ask(index, two_hop_chat(), passage_chars=60)
    data = result.to_json(with_trace=False)
    assert data["sources"][:2] == [
        {
            "n": 1,
            "id": "paris",
            "title": "Paris",
            "text": PARIS,
            "shown": "... The Eiffel Tower stands on the Champ de Mars in Paris.",
        },
        {
            "n": 2,
            "id": "seine",
            "title": "Seine",
            "text": SEINE,
            "shown": "The Seine is a river in northern France. ...",
        },
    ]
    # the check reads what was shown: Seine's trimmed text no longer names Paris
    assert data["answer"] == (
        "The Eiffel Tower stands in Paris [1]. The Seine flows through Paris [1][2]."
    )
    assert data["citation_check"]["recited"] == 1
    assert data["citations"] == CITATIONS
    contexts, _ = planner_context(
        result,
        PlannerSettings(draft=False, supplement=True, findings_call="batched", passage_chars=60),
    )
    assert contexts[-2:] == [s["shown"] for s in data["sources"][:2]]


async def test_an_answer_from_the_findings_cites_their_passages_with_pages(index) -> None:
    """The answer call fails: the answer is written from the findings, each citing its own
    passage, and those citations carry the page and url as a written answer's do."""
    chat = two_hop_chat()

    def broken(messages: list[BaseMessage]) -> str:
        return "no JSON here"

    chat.routes["answer"] = broken
    result = await ask(index, chat)
    assert result.degraded and result.short_answer == "Seine"
    assert result.to_json()["citations"] == CITATIONS


async def test_every_sentence_dropped_leaves_the_short_answer_cited(index) -> None:
    chat = two_hop_chat(answer=reply(short_answer="Seine", answer="Nothing here holds it [1]."))
    result = await ask(index, chat)
    assert result.short_answer == "Seine"
    assert result.to_json()["citations"] == CITATIONS[1:]
    assert result.answer == "Seine [2]."
