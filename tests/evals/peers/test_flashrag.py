"""FlashRAG's pipelines as peers (``evals.peers.flashrag``), run through ``run_eval`` against a
scripted endpoint: each is FlashRAG's own class with hoptree's passages in FlashRAG's own prompt
format, reaches the model at the URL it was given with the calls its loop should make (no
request per character, no duplicated prompt, no crash once IRCoT has its answer), at
temperature 0 with the run's output cap, and its prediction is FlashRAG's own parse without the
stop word FlashRAG's generator appends. The generator's bugs are shown on FlashRAG's own class
too, so a FlashRAG that fixes them tells us the workaround can go."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from evals.datasets import load_questions
from evals.peers import flashrag
from evals.peers.base import PeerQuestion, RecordingRetriever
from searchers.passages import Hit, Passage
from tests.eval_script import TINY
from tests.peer_endpoint import PeerRun, peer_endpoint, prompt_text, run_peer

pytest.importorskip(
    "flashrag",
    reason="FlashRAG is not installed (see evals/peers/flashrag.py for the install step)",
)

# FlashRAG warns that the scripted model is no tiktoken model (the peers silence it; pytest
# shows warnings again)
pytestmark = pytest.mark.filterwarnings("ignore:This model is not supported by tiktoken")

QUESTIONS = {
    "Eiffel": "Which river flows through the city where the Eiffel Tower stands?",
    "Bilbo": "In what year was the novel whose title character is Bilbo Baggins first published?",
}
ANSWERS = {"Eiffel": "Seine", "Bilbo": "1937"}
THOUGHTS = {"Eiffel": "The Eiffel Tower stands in Paris", "Bilbo": "Bilbo is in The Hobbit"}
FOLLOW_UPS = {"Eiffel": "Which city is the Eiffel Tower in?", "Bilbo": "Which novel is Bilbo in?"}


def _topic(text: str) -> str:
    """The tiny question a prompt is about (its own question, not an example's)."""
    return next(t for t, q in QUESTIONS.items() if q in text)


def _standard(body: dict[str, Any]) -> str:
    return ANSWERS[_topic(prompt_text(body))]


def _ircot(body: dict[str, Any]) -> str:
    """A thought first; with a thought already written (the assistant's turn), the answer."""
    topic = _topic(prompt_text(body))
    if body["messages"][-1]["role"] == "assistant":
        return f"So the answer is: {ANSWERS[topic]}"
    return THOUGHTS[topic]


def _self_ask(body: dict[str, Any]) -> str:
    """A follow-up question (stopped at "Intermediate answer:"), then the intermediate and the
    final answer (stopped at "#"; the Bilbo one at the end of the text, as a model may)."""
    text = prompt_text(body)
    topic = _topic(text)
    if text.endswith("Are follow up questions needed here: Yes.\n"):
        return f"Follow up: {FOLLOW_UPS[topic]}\n"
    final = f"\nIntermediate answer: Something.\nSo the final answer is: {ANSWERS[topic]}"
    return final + "\n" if topic == "Eiffel" else final


async def _run(
    name: str, reply: Any, settings: Settings, embeddings: Any, out: Path, *, calls: int | None
) -> tuple[PeerRun, dict[str, dict[str, Any]]]:
    """The peer on the two bridge questions; with ``calls``, that many chat requests made as
    every peer makes them (``check_plumbing``); the rows checked and keyed by topic."""
    run = await run_peer(name, reply, settings, embeddings, out, limit=2)
    if calls is not None:
        run.check_plumbing(calls=calls, max_tokens=settings.llm.max_tokens)
    return run, _check_rows(run)


def _check_rows(run: PeerRun) -> dict[str, dict[str, Any]]:
    """Each row answered cleanly from hoptree's passages; every prompt holds its question
    once (FlashRAG's non-chat truncation would send it twice)."""
    by_topic = run.by_topic(QUESTIONS)
    assert set(by_topic) == set(QUESTIONS)
    for topic, row in by_topic.items():
        assert row["error"] is None
        assert row["prediction"] == ANSWERS[topic] and row["em"] == 1
        assert row["retrieved_titles"] and row["gold_recall"] is not None
        assert row["peer"]["queries"][0] == QUESTIONS[topic]
        assert row["prompt_tokens"] > 0
    for body in run.endpoint.bodies():
        assert prompt_text(body).count(QUESTIONS[_topic(prompt_text(body))]) == 1
    return by_topic


def _passages(row: dict[str, Any]) -> list[tuple[str, str]]:
    """The (title, text) of each passage hoptree's retriever gave the peer for ``row``."""
    (question,) = (q for q in load_questions(TINY) if q.id == row["id"])
    texts = dict(question.paragraphs)
    return [(title, texts[title]) for title in row["retrieved_titles"]]


def _prompts(run: PeerRun, topic: str) -> list[str]:
    texts = [prompt_text(b) for b in run.endpoint.bodies()]
    return [t for t in texts if QUESTIONS[topic] in t]


async def test_standard_is_one_search_and_one_call_in_flashrags_prompt(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    run, rows = await _run("peer-standard", _standard, settings, embeddings, tmp_path, calls=2)
    for topic, row in rows.items():
        assert row["llm_calls"] == 1 and row["peer"]["queries"] == [QUESTIONS[topic]]
        assert row["peer"]["iterations"] == 1 and row["peer"]["raw"] == ANSWERS[topic]
        (prompt,) = _prompts(run, topic)
        for title, text in _passages(row):  # FlashRAG's "Doc i(Title: t) text" of each hit
            assert f"(Title: {title}) {text}" in prompt


async def test_ircot_searches_its_thought_and_stops_at_the_answer(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    # two calls a question: the loop goes on to five iterations with nothing left to ask,
    # where FlashRAG's generator would raise on generate([])
    run, rows = await _run("peer-ircot", _ircot, settings, embeddings, tmp_path, calls=4)
    for body in run.endpoint.bodies():
        assert body["stop"] == [".", "\n"]
    for topic, row in rows.items():
        thought = f"{THOUGHTS[topic]}."  # FlashRAG puts back the stop word, the period
        assert row["llm_calls"] == 2 and row["peer"]["queries"] == [QUESTIONS[topic], thought]
        assert row["peer"]["raw"] == f"{thought} So the answer is: {ANSWERS[topic]}."
        assert row["peer"]["iterations"] == 2
        first, second = _prompts(run, topic)
        assert first.endswith(f"Question: {QUESTIONS[topic]}\nThought:")
        assert second.endswith(f"Thought:\n{thought}")  # the thought, as the assistant's turn
        for title, text in _passages(row):
            assert f"Wikipedia Title: {title}\n{text}" in second


async def test_ircot_without_an_answer_stops_after_five_thoughts(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    def thinking(body: dict[str, Any]) -> str:
        return "Still thinking"

    run = await run_peer("peer-ircot", thinking, settings, embeddings, tmp_path, limit=1)
    (row,) = run.rows
    assert row["error"] is None and row["llm_calls"] == flashrag.IRCOT_MAX_ITER == 5
    assert len(row["peer"]["queries"]) == 6  # the question, then every thought, the last too
    # no "So the answer is:": FlashRAG's parse keeps the whole chain of thoughts
    assert row["prediction"] == " ".join(["Still thinking."] * 4 + ["Still thinking"])


async def test_iter_retgen_searches_three_times_with_its_last_answer(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    _, rows = await _run("peer-iter-retgen", _standard, settings, embeddings, tmp_path, calls=6)
    for topic, row in rows.items():
        again = f"{QUESTIONS[topic]} {ANSWERS[topic]}"
        assert row["llm_calls"] == 3 and row["peer"]["iterations"] == 3
        assert row["peer"]["queries"] == [QUESTIONS[topic], again, again]


async def test_self_ask_asks_a_follow_up_and_answers_by_text_completion(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    run, rows = await _run("peer-self-ask", _self_ask, settings, embeddings, tmp_path, calls=None)
    # two requests a question, not one per character of the prompt; Self-Ask's prompt is a
    # plain string, which FlashRAG sends as a text completion
    assert run.outside == [] and len(run.endpoint.requests) == 4
    assert {r["path"] for r in run.endpoint.requests} == {"/v1/completions"}
    assert {r["auth"] for r in run.endpoint.requests} == {"Bearer run-key"}
    for body in run.endpoint.bodies():
        assert body["temperature"] == 0 and body["max_tokens"] == settings.llm.max_tokens
    stops = [b["stop"][-1] for b in run.endpoint.bodies()]
    assert sorted(stops) == ["Follow up:"] * 2 + ["Intermediate answer:"] * 2
    for topic, row in rows.items():
        assert row["llm_calls"] == 2 and row["peer"]["iterations"] == 2
        assert row["peer"]["queries"] == [QUESTIONS[topic], FOLLOW_UPS[topic]]
        assert "Context:" not in row["prediction"]
        assert row["peer"]["raw"].endswith(f"So the final answer is: {ANSWERS[topic]}")
        first, second = _prompts(run, topic)
        assert first.endswith("Are follow up questions needed here: Yes.\n")
        # the scratchpad the second call continues is the model's follow-up, no stop word
        assert second.endswith(f"Yes.\nFollow up: {FOLLOW_UPS[topic]}")
        assert any(
            f": {text}\n" in second for _, text in _passages(row)
        )  # Self-Ask's "Contexti: text" of the follow-up's hits


def test_the_retriever_adapter_returns_flashrags_documents_with_hoptrees_scores() -> None:
    hits = [
        Hit(Passage("p1", "Seine", "A river."), 3.5),
        Hit(Passage("p2", "Paris", "A city."), 1.0),
    ]
    asked: list[tuple[str, int]] = []

    def retrieve(query: str, k: int) -> list[Hit]:
        asked.append((query, k))
        return hits[:k]

    adapter = flashrag.FlashRAGRetriever(retrieve, topk=2)
    docs = adapter.search("river")
    assert docs[0] == {
        "id": "p1",
        "title": "Seine",
        "text": "A river.",
        "contents": "Seine\nA river.",
    }
    assert adapter.search("river", num=1, return_score=True) == ([docs[0]], [3.5])
    batch, scores = adapter.batch_search(["a", "b"], return_score=True)
    assert batch == [docs, docs] and scores == [[3.5, 1.0], [3.5, 1.0]]
    assert adapter.batch_search("c") == [docs]
    assert asked == [("river", 2), ("river", 1), ("a", 2), ("b", 2), ("c", 2)]


def test_stop_words_left_at_the_end_are_stripped() -> None:
    assert flashrag.strip_stops("TulsaContext:", ("Context:", "#")) == "Tulsa"
    assert flashrag.strip_stops(" Seine. ", (".", "\n")) == "Seine"
    assert flashrag.strip_stops("St. Louis", (".", "\n")) == "St. Louis"
    assert flashrag.strip_stops("yes", ()) == "yes"


def test_flashrags_own_generator_still_has_the_bugs_worked_around(tmp_path: Path) -> None:
    """On FlashRAG's ``OpenaiGenerator`` itself: a string prompt is one request per character,
    ``generate([])`` raises, and the reply gets ``stop[0]`` appended; the peers' subclass
    sends one request, answers [] and passes on the server's text where asked to."""
    from flashrag.generator.openai_generator import OpenaiGenerator

    with peer_endpoint(lambda body: "Tulsa") as endpoint:
        question = PeerQuestion(
            "q", 2, endpoint.base_url, "stub", 16, 30, RecordingRetriever(lambda q, k: [], 2)
        )
        flashrag._prepare()
        config = flashrag._config(question, str(tmp_path))
        theirs = OpenaiGenerator(config)
        assert theirs.generate("abc") == ["Tulsa"] * 3 and len(endpoint.requests) == 3
        with pytest.raises(IndexError):
            theirs.generate([])
        assert theirs.generate(["abc"], stop=["Context:", "#"]) == ["TulsaContext:"]

        ours = flashrag._generator_class()(config, restore_stop=False)
        endpoint.requests.clear()
        assert ours.generate("abc", stop=["Context:", "#"]) == ["Tulsa"]
        assert ours.generate([]) == [] and len(endpoint.requests) == 1
        ours.restore_stop = True
        assert ours.generate("abc", stop=["Context:"]) == ["TulsaContext:"]
        assert ours.replies == ["Tulsa", "Tulsa"]
        ours.close()


def test_two_questions_at_once_each_get_their_own_answer() -> None:
    """Two questions in flight together (as on two slots) share FlashRAG's one event loop,
    each with its own generator at its own URL; neither waits for the other."""
    both_asked = threading.Barrier(2, timeout=20)

    def reply(body: dict[str, Any]) -> str:
        both_asked.wait()  # fails unless the two requests are in flight at the same time
        return ANSWERS[_topic(prompt_text(body))]

    def retrieve(query: str, k: int) -> list[Hit]:
        return [Hit(Passage(f"p-{query[:5]}", "Paris", "The Seine flows through Paris."), 1.0)]

    standard = flashrag._Method(flashrag._standard)
    with peer_endpoint(reply) as endpoint, ThreadPoolExecutor(2) as pool:
        questions = [
            PeerQuestion(q, 1, endpoint.base_url, "stub", 16, 30, RecordingRetriever(retrieve, 1))
            for q in QUESTIONS.values()
        ]
        answers = list(pool.map(standard.run, questions))
    assert [a.prediction for a in answers] == list(ANSWERS.values())
    assert len(endpoint.requests) == 2
