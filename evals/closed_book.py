"""Answering from the model's own knowledge: the ``no-retrieval`` baseline of the evaluations
(``evals.pipelines``), and the smoke test of the chat path (prompt file -> schema-enforced JSON
-> parsed object) in ``tests/agent/runtime/test_local_model.py``. It lives in ``evals``, its
one user in the product, rather than in ``agent``, which answers only through the planner."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

import prompts
from agent.rules.question import clean_question
from agent.runtime.usage import STEP_KEY


class ShortAnswer(BaseModel):
    answer: str = Field(description="a few words: a name, a date, a number, or yes/no")


async def answer_closed_book(model: BaseChatModel, question: str) -> str:
    structured = model.with_structured_output(ShortAnswer, method="json_schema")
    messages = prompts.render("closed_book", question=clean_question(question))
    result = await structured.ainvoke(messages, config={"metadata": {STEP_KEY: "closed_book"}})
    if not isinstance(result, ShortAnswer):
        raise ValueError(f"the model returned no parseable answer: {result!r}")
    return result.answer.strip()
