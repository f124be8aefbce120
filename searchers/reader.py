"""One-call RAG's reader: the question and a few numbered passages, trimmed around the question,
in one call whose reply is the short answer alone (``prompts/rag_answer.txt``).

The one-call baselines read with it, and so does the planner when a plan does not resolve
(``agent.planner.answer.choose_mode``): measured on the v4 tuning rows, the planner's
own answer prompt (a short and a cited long answer) wrote longer short answers over the same
passages than this reader ("Tulsa, Oklahoma" for "Tulsa", a clause copied from a passage for
"Chinese"), and its open plans scored 62-65 F1 where the one-call run scored 69-71 on the same
HotpotQA questions."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

import prompts
from searchers.searcher import RunScope
from searchers.structured_calls import Reply, ask
from searchers.text import key_terms, split_sentences
from searchers.verification import contains_span, terms_present


class ReaderReply(BaseModel):
    answer: str = Field(description="a few words: a name, a date, a number, or yes/no")


async def read_short_answer(
    chat: BaseChatModel,
    question: str,
    passages: str,
    *,
    scope: RunScope,
    step: str,
    logprobs: bool = False,
) -> Reply[ReaderReply]:
    """The reader's one call over ``passages``, numbered and trimmed as
    ``searchers.passages.numbered_passages`` writes them around the question; ``logprobs``
    asks for the reply tokens' log-probabilities (the draft's confidence)."""
    return await ask(
        chat,
        ReaderReply,
        prompts.render("rag_answer", question=question, passages=passages),
        scope=scope,
        step=step,
        logprobs=logprobs,
    )


def best_sentence(
    shown: list[tuple[int, str]], question: str, *, holding: str = "", min_terms: int = 0
) -> tuple[int, str] | None:
    """(passage number, sentence): the shown sentence with the most of the question's key
    terms, the first of equals, among those that hold ``holding`` (a span, when given) and
    share at least ``min_terms`` terms; None when no sentence qualifies."""
    terms = key_terms(question)
    best: tuple[int, int, str] | None = None
    for number, text in shown:
        for sentence in split_sentences(text):
            if holding and not contains_span(holding, sentence):
                continue
            hits = terms_present(terms, sentence)
            if hits >= min_terms and (best is None or hits > best[0]):
                best = (hits, number, sentence.strip())
    return None if best is None else (best[1], best[2])


def holding_sentence(short: str, shown: list[tuple[int, str]], question: str) -> str | None:
    """``"<sentence> [n]."``: the shown sentence that holds ``short`` and most of the
    question's key terms, cited by its passage's number; None when no shown sentence holds it.
    It is the long answer of a reply that has only a short one: a sentence the passage itself
    states."""
    found = best_sentence(shown, question, holding=short) if short.strip() else None
    if found is None:
        return None
    number, sentence = found
    return f"{sentence.rstrip(' .')} [{number}]."
