"""One-call RAG's reader: the question and a few numbered passages, trimmed around the question,
in one call whose reply is the short answer alone (``prompts/rag_answer.txt``).

The one-call baselines read with it, and so does the planner when a plan does not resolve
(``agent.planner.answer.choose_mode``): measured on the v4 tuning rows, the planner's
own answer prompt (a short and a cited long answer) wrote longer short answers over the same
passages than this reader ("Tulsa, Oklahoma" for "Tulsa", a clause copied from a passage for
"Chinese"), and its open plans scored 62-65 F1 where the one-call run scored 69-71 on the same
HotpotQA questions.

Its free-text form (``read_free_answer``: whole passages in the system message, the question
alone, a plain reply) is what the draft reads with by default since it read 1-7 F1 above the
JSON reply end to end (``PlannerSettings.answer_reader``, ``evals/results/v11``), and what a
hop's finding reads with since it read MuSiQue's hops better (``findings_call``,
``evals/results/v12``); the one-call baselines keep the JSON reply, so their recorded rows stay
comparable."""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

import prompts
from searchers.searcher import RunScope
from searchers.structured_calls import Reply, ask, ask_text
from searchers.text import key_terms, split_sentences
from searchers.verification import contains_span, terms_present


class ReaderReply(BaseModel):
    answer: str = Field(description="a few words: a name, a date, a number, or yes/no")


FREE_MAX_TOKENS = 48  # an answer "only, no other words"; a longer reply is cut and read as is


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


def free_answer(text: str) -> str:
    """The answer in a free-text reply: its first non-empty line, without a leading "Answer:",
    quotes or the closing full stop. A reply that is the JSON the other reader writes
    (``{"answer": ...}``) is read as that reader's; any other JSON object gives no answer."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):  # an object without an answer is no answer
            answer = value.get("answer")
            return " ".join(answer.split()) if isinstance(answer, str) else ""
    line = next((ln.strip() for ln in stripped.splitlines() if ln.strip()), "")
    if line.lower().startswith("answer:"):
        line = line[len("answer:") :].strip()
    return " ".join(line.strip().strip('"').rstrip(".").strip().split())


# what the free reader is shown of each passage: whole, up to this many characters around the
# question (a paragraph of the datasets is 440 characters at the median; 2% of 2Wiki's and
# none of MuSiQue's exceed it)
WHOLE_CHARS = 2000


def documents_block(documents: Sequence[tuple[str, str]]) -> str:
    """``Document n (Title: t) text`` lines, numbered from 1 as the answer cites them."""
    return "\n".join(
        f"Document {n} (Title: {title}) {text}" for n, (title, text) in enumerate(documents, 1)
    )


async def read_free_answer(
    chat: BaseChatModel,
    question: str,
    documents: Sequence[tuple[str, str]],
    *,
    scope: RunScope,
    step: str,
    logprobs: bool = False,
) -> Reply[ReaderReply]:
    """The reader's one call with the whole passages (``documents``: title, text) in the
    system message, the question alone as the user's, and a free-text reply
    (``prompts/free_answer.txt``): the layout of FlashRAG's one call, which on the tuning
    slices read 7-11 F1 above ``read_short_answer`` over the same five passages
    (``benchmarks/results/reader-prompt.md``). The reply is read by ``free_answer``; one with no
    answer in it is an error, as an unparseable JSON reply is."""
    reply = await ask_text(
        chat,
        prompts.render("free_answer", documents=documents_block(documents), question=question),
        scope=scope,
        step=step,
        max_tokens=FREE_MAX_TOKENS,
        logprobs=logprobs,
    )
    if reply.value is None:
        return Reply(None, reply.error, timed_out=reply.timed_out)
    answer = free_answer(reply.value.text)
    if not answer:
        return Reply(None, f"{step}: no answer in the reply ({reply.value.text.strip()[:80]!r})")
    return Reply(ReaderReply(answer=answer), cut=reply.cut, token_logprobs=reply.token_logprobs)
