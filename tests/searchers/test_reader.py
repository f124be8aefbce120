"""The free reader (``searchers.reader.read_free_answer``, ``structured_calls.ask_text``): what
it sends (the whole passages in the system message, the question alone, a reply cap, a request
for log-probabilities) and how it reads a reply, against a scripted OpenAI-compatible endpoint
on 127.0.0.1 through the client hoptree uses."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from agent.runtime.chat_models import HoptreeChatOpenAI
from searchers.reader import FREE_MAX_TOKENS, free_answer, read_free_answer
from searchers.searcher import RunScope
from searchers.structured_calls import ask_text
from tests.peer_endpoint import peer_endpoint

DOCUMENTS = [
    ("Lake Varo", "Lake Varo is a lake in the north. " + "Reeds line its shore. " * 30),
    ("Ostra", "The Ostra is the river that drains Lake Varo."),
]


def chat_at(base_url: str) -> HoptreeChatOpenAI:
    return HoptreeChatOpenAI(
        base_url=base_url, model="stub", api_key=SecretStr("x"), max_tokens=512, temperature=0
    )


def scope() -> RunScope:
    return RunScope(max_llm_calls=2, deadline_s=30, llm_timeout_s=10)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Ostra", "Ostra"),
        ("Answer: the Ostra.", "the Ostra"),
        ('"Ostra"\nIt drains the lake.', "Ostra"),
        ('{"answer": "Ostra "}', "Ostra"),  # the JSON reader's reply, read as that reader's
        ('{"wrong_field": "no"}', ""),  # JSON without the answer: no answer
        ("{not json", "{not json"),
        ("\n\n", ""),
    ],
)
def test_a_free_reply_is_read_as_its_first_line(reply: str, answer: str) -> None:
    assert free_answer(reply) == answer


async def test_the_whole_passages_go_in_the_system_message_and_the_question_alone() -> None:
    tokens = [{"token": "O", "logprob": -0.5}, {"token": "stra", "logprob": -0.1}]

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        return {"content": "Ostra", "logprobs": {"content": tokens}}

    question = "Which river drains Lake Varo?"
    with peer_endpoint(reply) as endpoint:
        chat = chat_at(endpoint.base_url)
        got = await read_free_answer(
            chat, question, DOCUMENTS, scope=scope(), step="draft", logprobs=True
        )
    assert got.value is not None and got.value.answer == "Ostra"
    assert got.token_logprobs == (("O", -0.5), ("stra", -0.1))
    (body,) = endpoint.bodies()
    system, user = body["messages"]
    assert system["role"] == "system" and user == {
        "role": "user",
        "content": f"Question: {question}",
    }
    assert f"Document 1 (Title: Lake Varo) {DOCUMENTS[0][1]}" in system["content"]
    assert "Document 2 (Title: Ostra) The Ostra is the river" in system["content"]
    assert body["max_completion_tokens"] == FREE_MAX_TOKENS and body["logprobs"] is True
    assert "response_format" not in body  # free text: no schema binds the reply


async def test_a_reply_cut_at_the_cap_is_kept_and_an_empty_one_is_an_error() -> None:
    replies = iter([{"content": "Ostra, which", "finish_reason": "length"}, {"content": " "}])
    with peer_endpoint(lambda body: next(replies)) as endpoint:
        chat = chat_at(endpoint.base_url)
        cut = await read_free_answer(chat, "q?", DOCUMENTS, scope=scope(), step="draft")
        empty = await read_free_answer(chat, "q?", DOCUMENTS, scope=scope(), step="draft")
    assert cut.cut and cut.value is not None and cut.value.answer == "Ostra, which"
    assert empty.value is None and empty.error == "draft: no answer in the reply ('')"
    assert "logprobs" not in endpoint.bodies()[0]  # asked for only when the caller wants them


async def test_a_dead_endpoint_is_an_error_value_and_the_call_is_charged() -> None:
    budget = scope()
    chat = chat_at("http://127.0.0.1:9/v1").model_copy(update={"max_retries": 0})
    got = await ask_text(chat, [], scope=budget, step="draft")
    assert got.value is None and got.error is not None and got.error.startswith("draft: ")
    assert budget.llm_calls == 1
