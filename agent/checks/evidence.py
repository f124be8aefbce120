"""What the planner may believe and what the answer step reads: pure functions, no LLM.

- a finding (an atomic query's short answer) counts only when its span occurs in the passages
  it came from (``support``); an unsupported finding is "not found", never a lead to follow;
- the answer step reads raw passages chosen from everything the rounds found
  (``select_evidence``): each supported finding's passage first, then the rest by how many of
  the question's and the findings' names and words they hold.

Why (a 1.5B summarizer drops and invents facts): docs/architecture.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.rules.answer_text import restates
from agent.rules.claims import anchors, named
from searchers.text import WORD, fold, key_terms, normalize_answer_folded, stem
from searchers.verification import NO_ANSWER, YES_NO, contains_span

# A finding that is a sentence rather than a span is checked word by word: most of its content
# words must occur together in one passage.
MIN_WORD_SHARE = 0.8
MAX_SPAN_WORDS = 10
MAX_FINDING_WORDS = 12


def _text(passage: Mapping[str, Any]) -> str:
    return f"{passage.get('title', '')} {passage['text']}"


def names_one(names: Sequence[frozenset[str]], passage: Mapping[str, Any]) -> bool:
    """Does the passage name one of ``names``?"""
    words = _words(passage)
    return any(named(name, words) for name in names)


def support(
    answer: str,
    cited: Sequence[Mapping[str, Any]],
    shown: Sequence[Mapping[str, Any]],
    query: str = "",
) -> list[str]:
    """The ids of the passages that hold ``answer``: the cited ones if they do, else any shown
    one that does (the model's numbers are often off by one); [] means unsupported.

    A passage counts only if it also names one of the query's names (when the query has
    any): a span lifted from a passage about something else ("Chicago", from an essay titled
    "Chicago: City on the Make", for "city of Tinted Windows") is not a finding. An answer
    that only repeats the query's words is none either. A yes/no answer has no span to look
    for: it is supported by the passages the model cited, if it cited any of the shown ones."""
    target = normalize_answer_folded(answer)
    if target in NO_ANSWER:
        return []
    if target in YES_NO:
        shown_ids = {str(p["id"]) for p in shown}
        return [str(p["id"]) for p in cited if str(p["id"]) in shown_ids]
    if query and restates(answer, query):
        return []
    if len(target.split()) > MAX_FINDING_WORDS:  # a retold passage, not an answer span
        return []
    names = anchors(query)
    if names:
        cited = [p for p in cited if names_one(names, p)]
        shown = [p for p in shown if names_one(names, p)]
    for pool in (cited, shown):
        found = [str(p["id"]) for p in pool if contains_span(answer, _text(p))]
        if found:
            return found
    words = [w for w in target.split() if w]
    if len(words) > MAX_SPAN_WORDS:
        return []
    for pool in (cited, shown):
        for passage in pool:
            present = set(normalize_answer_folded(_text(passage)).split())
            if sum(w in present for w in words) / len(words) >= MIN_WORD_SHARE:
                return [str(passage["id"])]
    return []


@dataclass(frozen=True)
class Finding:
    """One atomic query's supported answer, as the evidence selection uses it."""

    query: str
    answer: str
    sources: tuple[str, ...]


def _key_terms_of(texts: Sequence[str]) -> list[str]:
    """The key terms of ``texts``, each once, in the order they first occur."""
    return list(dict.fromkeys(term for text in texts for term in key_terms(text)))


def _words(passage: Mapping[str, Any]) -> set[str]:
    text = fold(f"{passage.get('title', '')} {passage['text']}")
    return {stem(w) for w in WORD.findall(text)}


def _holds(term: str, words: set[str]) -> bool:
    """A multi-word name counts when most of its words occur (passages abbreviate names)."""
    parts = term.split()
    return sum(1 for w in parts if w in words) / len(parts) >= 0.5


def relevance(
    question: str, findings: Sequence[Finding], pool: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """A score per passage of ``pool``: the IDF-weighted share of the terms of the question
    and of the findings' answers that the passage holds. Names the findings revealed (the
    bridge entities) weigh as much as the question's own, since the second hop's passage is
    found by them."""
    terms = _key_terms_of([question, *[f.answer for f in findings]])
    if not pool or not terms:
        return {str(p["id"]): 0.0 for p in pool}
    words = {str(p["id"]): _words(p) for p in pool}
    n = len(pool)
    idf = {t: math.log(1 + n / (1 + sum(_holds(t, w) for w in words.values()))) for t in terms}
    return {pid: sum(idf[t] for t in terms if _holds(t, w)) for pid, w in words.items()}


def select_evidence(
    question: str,
    findings: Sequence[Finding],
    ranked: Sequence[Sequence[str]],
    passages: Mapping[str, Mapping[str, Any]],
    limit: int,
) -> list[str]:
    """The ids of the passages the answer step reads, in the order it reads them.

    ``findings`` are the supported ones, in query order; ``ranked`` holds every atomic
    query's fused passage ids, best first. First the first source of each finding, then their
    other sources, then every other passage found, by ``relevance`` (ties: the better fused
    rank, then the earlier query): deduplicated and deterministic."""
    chosen: list[str] = []

    def take(pid: str) -> None:
        if pid in passages and pid not in chosen and len(chosen) < limit:
            chosen.append(pid)

    for finding in findings:
        if finding.sources:
            take(finding.sources[0])
    for finding in findings:
        for pid in finding.sources[1:2]:
            take(pid)
    rank: dict[str, tuple[int, int]] = {}
    for qi, ids in enumerate(ranked):
        for pos, pid in enumerate(ids):
            if pid in passages and (pid not in rank or (pos, qi) < rank[pid]):
                rank[pid] = (pos, qi)
    pool = [passages[pid] for pid in rank if pid not in chosen]
    scores = relevance(question, findings, pool)
    order = sorted(scores, key=lambda pid: (-round(scores[pid], 6), *rank[pid]))
    for pid in order:
        take(pid)
    return chosen
