"""A scripted chat model for the QuALITY tests: the multiple-choice reader's replies keyed by
question, tree summaries made from the passages' first words, and the planner's prompts routed
as ``RoutedChatModel`` routes them. Not a language model: the scores the tests check are the
pipelines' arithmetic on replies fixed in advance."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from tests.routed_chat import RoutedChatModel

TINY = Path(__file__).parent / "data_eval" / "quality_tiny.jsonl"  # tests/data is ingested whole
CHOICE_PHRASE = "Pick the right option of a multiple-choice question"
SUMMARY_PHRASE = "Write a summary of the passages below"
# The reader's reply per question of the tiny article (gold: B, C, A, C): right on the first
# and third (the third is HARD), wrong on the second, and a reply naming no option on the last
# (HARD), so accuracy is 2/4 and HARD accuracy 1/2.
REPLIES = {
    "tiny_set1_1": json.dumps({"choice": "B"}),
    "tiny_set1_2": json.dumps({"choice": "A"}),
    "tiny_set2_1": json.dumps({"choice": "A"}),
    "tiny_set2_2": "I cannot tell from these excerpts.",
}
QUESTION_IDS = {
    "Why does the beam of the Tarn Island light": "tiny_set1_1",
    "How does Orla keep the lamp burning": "tiny_set1_2",
    "What does Orla's backup mechanism suggest": "tiny_set2_1",
    "Why does Hamish's reply say": "tiny_set2_2",
}


def question_id(user: str) -> str:
    for start, qid in QUESTION_IDS.items():
        if start in user:
            return qid
    raise AssertionError(f"no scripted question in {user[:120]!r}")


def summary(user: str) -> str:
    passages = user.split("Passages:", 1)[-1]
    return "Keeper summary: " + " ".join(passages.split()[:12])


def _reply(**fields: object) -> str:
    return json.dumps(fields)


def _first_line(messages: list[BaseMessage], prefix: str) -> str:
    for line in str(messages[-1].content).splitlines():
        if line.startswith(prefix):
            return line.removeprefix(prefix).strip()
    return ""


def _findings(messages: list[BaseMessage]) -> str:
    items = []
    for line in str(messages[-1].content).splitlines():
        if line.startswith("Query "):
            number = int(line.removeprefix("Query ").split(":", 1)[0])
            items.append({"query": number, "answer": "Orla Venn", "passages": [1]})
    return json.dumps({"findings": items})


PLANNER_ROUTES: dict[str, Any] = {
    "decompose": lambda m: _reply(queries=[_first_line(m, "Question:") or "keeper"]),
    "rewrite": lambda m: _reply(query=_first_line(m, "Query:") or "keeper"),
    "hyde": _reply(passage="Orla Venn kept the lamp of Tarn Island turning."),
    "summarize": _findings,
    "verify": _reply(sufficient=True, queries=[]),
    "answer": _reply(short_answer="Orla Venn", answer="Orla Venn kept the light [1]."),
}


class QualityChat(RoutedChatModel):
    replies_by_question: dict[str, str] = Field(default_factory=lambda: dict(REPLIES))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Sequence[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = str(messages[0].content) if messages else ""
        user = str(messages[-1].content)
        if CHOICE_PHRASE in system:
            qid = question_id(user)
            self.seen.append(("choice", qid))
            return self.result(self.replies_by_question[qid])
        if SUMMARY_PHRASE in system:
            self.seen.append(("summary", user))
            return self.result(summary(user))
        return super()._generate(messages, stop, run_manager, **kwargs)


def quality_chat(**kwargs: Any) -> QualityChat:
    return QualityChat(routes=dict(PLANNER_ROUTES), **kwargs)
