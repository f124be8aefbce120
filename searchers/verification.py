"""Deciding whether a retrieval answers its query, without trusting a small model's "yes".

The local 1.5B model calls almost any retrieval sufficient, so its verdict alone would end every
refinement loop at the first try. The cheap signal here is term coverage: the share of the
query's key terms (names, numbers, quoted phrases, rare content words) found in the hits. It
costs no LLM call, so it also gates the LLM: when coverage is too low the retrieval is judged
insufficient without asking. ``VerificationRule`` (``searchers/searcher_configs.py``, beside the
searchers' configs that carry it) says how the two combine; the default was chosen by
measurement (``evals/verification_study.py``, results in ``evals/results/verification.md``).

Two ways of asking the LLM are offered. ``llm`` asks for a yes/no judgement; the local model said
no to every one of 120 questions, so it cannot stop anything. ``extract`` asks the model to copy
the answer span out of the passages and accepts only a span that really occurs in them: a
grounding check the model cannot talk its way past, and a candidate answer for the trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

import prompts
from searchers.passages import Hit, numbered_passages
from searchers.searcher import Attempt, BudgetExceeded, RunScope, Verdict
from searchers.searcher_configs import RuleKind as RuleKind
from searchers.searcher_configs import VerificationRule
from searchers.structured_calls import ask
from searchers.text import WORD, fold, key_terms, normalize_answer_folded, stem


def _present(term: str, haystack_words: set[str], haystack_text: str) -> bool:
    words = term.split()
    if len(words) == 1:
        return words[0] in haystack_words
    # a multi-word name counts when most of its words occur (passages abbreviate names)
    found = sum(1 for w in words if w in haystack_words)
    return found / len(words) >= 0.5 or term in haystack_text


def terms_present(terms: Sequence[str], text: str) -> int:
    """How many of ``terms`` (``key_terms`` output: folded, stemmed) occur in ``text``; a
    multi-word name counts when half its words do. The one rule for "does this text mention
    the query's terms", read by the searchers' coverage check and by the answer step's
    no-model fallback."""
    stems = [stem(w) for w in WORD.findall(fold(text))]
    words, joined = set(stems), " ".join(stems)
    return sum(1 for t in terms if _present(t, words, joined))


def coverage(query: str, hits: Sequence[Hit], *, top: int = 5) -> float:
    """Share of the query's key terms that occur in the titles and texts of the top hits."""
    terms = key_terms(query)
    if not terms:
        return 0.0
    text = " ".join(f"{h.title} {h.text}" for h in hits[:top])
    return terms_present(terms, text) / len(terms)


YES_NO = frozenset({"yes", "no"})
NO_ANSWER = frozenset({"", "none", "unknown", "n a", "not found", "no answer", "not mentioned"})


_NUMBER_WORDS = {
    word: str(n)
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}


def _digits(normalized: str) -> str:
    """Small numbers as digits: "three acts" and "3 acts" are one span."""
    return " ".join(_NUMBER_WORDS.get(w, w) for w in normalized.split())


def contains_span(span: str, text: str) -> bool:
    """Does ``span`` occur in ``text`` as whole words, after HotpotQA's normalisation? The one
    check behind every "is this answer a span of the evidence" in hoptree. Numbers up to
    twenty match whether written as words or digits: the model copies "3" from "three acts"
    (measured on HotpotQA v3: two findings of an opera's acts were refused for it, and the
    reader then guessed a yes/no question wrong)."""
    target = normalize_answer_folded(span)
    if not target:
        return False
    haystack = normalize_answer_folded(text)
    if f" {target} " in f" {haystack} ":
        return True
    words = set(target.split())
    if not any(w.isdigit() or w in _NUMBER_WORDS for w in words):
        return False
    return f" {_digits(target)} " in f" {_digits(haystack)} "


def grounded(answer: str, hits: Sequence[Hit], *, top: int = 5) -> bool:
    """Does the extracted span occur in the top hits? A yes/no reply counts as grounded (no span
    can be checked for it); an empty or "unknown" reply never does."""
    target = normalize_answer_folded(answer)
    if target in NO_ANSWER:
        return False
    if target in YES_NO:
        return True
    return contains_span(answer, " ".join(f"{h.title} {h.text}" for h in hits[:top]))


class Judgement(BaseModel):
    answers_query: bool


class Extraction(BaseModel):
    answer: str = Field(description="the answer span copied from the passages, or empty")


async def verify_hits(
    chat: BaseChatModel,
    query: str,
    hits: Sequence[Hit],
    scope: RunScope,
    rule: VerificationRule,
    top: int = 5,
    passage_chars: int = 300,
) -> Verdict:
    """Coverage first (free); the LLM only when the rule needs it and coverage lets it through.
    Raises ``BudgetExceeded`` when the LLM is needed and the budget is spent."""
    cov = coverage(query, hits, top=top)
    if not hits:
        return Verdict(sufficient=False, coverage=cov, reason="no hits")
    if not rule.gate(cov):
        return Verdict(sufficient=False, coverage=cov, reason="key terms missing from the hits")
    if not rule.needs_llm:
        return Verdict(sufficient=rule.decide(cov, None), coverage=cov, reason="coverage rule")
    shown = numbered_passages(list(hits[:top]), max_chars=passage_chars, query=query)
    if rule.extracts:
        return await _extract_verdict(chat, query, hits, shown, cov, scope, rule, top)
    reply = await ask(
        chat,
        Judgement,
        prompts.render(
            "searcher_verify",
            query=query,
            passages=shown,
        ),
        scope=scope,
        step="searcher_verify",
    )
    llm_says = reply.value.answers_query if reply.value else None
    return Verdict(
        sufficient=rule.decide(cov, llm_says),
        llm_says=llm_says,
        coverage=cov,
        reason=reply.error or ("the model found the answer" if llm_says else "the model did not"),
    )


async def _extract_verdict(
    chat: BaseChatModel,
    query: str,
    hits: Sequence[Hit],
    shown: str,
    cov: float,
    scope: RunScope,
    rule: VerificationRule,
    top: int,
) -> Verdict:
    reply = await ask(
        chat,
        Extraction,
        prompts.render("searcher_extract", query=query, passages=shown),
        scope=scope,
        step="searcher_extract",
    )
    span = " ".join(reply.value.answer.split())[:200] if reply.value else ""
    found = grounded(span, hits, top=top)
    if reply.error:
        reason = reply.error
    elif found:
        reason = f"answer found in the passages: {span!r}"
    elif normalize_answer_folded(span) in NO_ANSWER:
        reason = "the model found no answer"
    else:
        reason = f"the model's answer {span!r} is not in the passages"
    return Verdict(
        sufficient=rule.decide(cov, found),
        llm_says=found,
        coverage=cov,
        reason=reason,
        answer=span or None,
    )


class JudgeSettings(Protocol):
    """What a searcher's config says about judging its attempts."""

    rule: VerificationRule
    verify_top: int
    passage_chars: int


async def judge_attempt(
    attempt: Attempt,
    chat: BaseChatModel,
    query: str,
    hits: Sequence[Hit],
    scope: RunScope,
    cfg: JudgeSettings,
) -> str | None:
    """Record the verdict on ``attempt``. A spent budget is returned as the stop reason rather
    than raised, because a searcher out of calls still hands back what it has found."""
    try:
        attempt.verdict = await verify_hits(
            chat, query, hits, scope, cfg.rule, cfg.verify_top, cfg.passage_chars
        )
    except BudgetExceeded as exc:
        return exc.reason
    return None
