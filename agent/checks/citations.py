"""A lexical check of a cited answer: does each sentence's claim stand in the passages it cites?

The answer step shows the model numbered passages ``[1]..[N]`` and asks for a short answer plus
1-3 cited sentences; the 1.5B model glues facts from unrelated passages into one sentence and
misplaces its ``[n]`` marks, and a judge of its size would not notice. So, without a model: the
names and numbers a sentence states (``agent.rules.claims``) must occur in the passages it
cites, and every number in a cited passage that also names the sentence's subject. A sentence
that fails is re-cited to the passages that do support it, or dropped. ``ground_short_answer``
snaps a short answer onto the passages' wording ("Cain Ballroom" to "Cain's Ballroom").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from agent.rules.answer_text import closest_window
from agent.rules.claims import Term, TextIndex, claims
from agent.rules.query_text import without_aside
from agent.rules.question import Question
from searchers.text import (
    WORD,
    fold,
    normalize_answer_folded,
    split_cited_sentences,
    split_sentences,
)
from searchers.verification import NO_ANSWER, YES_NO, contains_span


@dataclass(frozen=True)
class SourceText:
    """One numbered passage exactly as the answer step showed it, the title part of it: the
    check's own view of a shown source (``agent.results.ShownSource``, whose ``shown`` text it
    holds as ``text``), so the check needs nothing of the planner and its tests build it bare."""

    n: int
    title: str
    text: str


@dataclass
class CitationCheck:
    """The repaired answer and what the check did to each sentence."""

    answer: str
    cited: list[int] = field(default_factory=list)
    sentences: int = 0
    kept: int = 0
    recited: int = 0
    dropped: int = 0
    dropped_sentences: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Counts for the trace; the answer itself is recorded by the caller."""
        return {
            "sentences": self.sentences,
            "kept": self.kept,
            "recited": self.recited,
            "dropped": self.dropped,
            "dropped_sentences": list(self.dropped_sentences),
        }


# --- splitting into sentences -------------------------------------------------------------

_MARK = re.compile(r"\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\]")


def _marks(sentence: str) -> list[int]:
    """Every number in the sentence's ``[n]``, ``[1][2]``, ``[1, 2]`` marks, in order."""
    return [int(n) for mark in _MARK.findall(sentence) for n in re.findall(r"\d+", mark)]


def _body_and_end(sentence: str) -> tuple[str, str]:
    """The sentence without its marks, and its final punctuation, so marks can be re-placed
    just before that punctuation."""
    body = _MARK.sub(" ", sentence)
    body = re.sub(r"\s+([,;:.!?])", r"\1", " ".join(body.split()))
    match = re.search(r"[.!?]+$", body)
    end = match.group() if match else ""
    body = body[: len(body) - len(end)].rstrip(" ,;:")
    return body, end


def _render(body: str, end: str, marks: Iterable[int]) -> str:
    tags = "".join(f"[{n}]" for n in sorted(set(marks)))
    return f"{body} {tags}{end}" if tags else f"{body}{end}"


def _supports(indexes: Sequence[TextIndex], terms: Sequence[Term]) -> bool:
    """Rules a and b: every term occurs in some cited passage, and every number or date occurs
    in a cited passage that also holds one of the sentence's names (no gluing)."""
    if not all(any(p.has(t) for p in indexes) for t in terms):
        return False
    names = [t for t in terms if t.kind == "name"]
    if not names:
        return True
    return all(
        any(p.has(t) and any(p.has(name) for name in names) for p in indexes)
        for t in terms
        if t.kind != "name"
    )


def _recite(
    terms: Sequence[Term],
    indexes: dict[int, TextIndex],
    titles: dict[int, TextIndex],
    original: Sequence[int],
) -> list[int] | None:
    """The smallest set (one passage, else two) that supports the sentence. Among equals: the
    one keeping most of the model's own marks, then the one whose titles name most of the
    sentence's names (a passage about Hanson beats one that mentions Taylor Hanson), then the
    lowest numbers."""
    names = [t for t in terms if t.kind == "name"]

    def preference(combo: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
        about = sum(1 for name in names if any(titles[n].has(name) for n in combo))
        return (-len(set(combo) & set(original)), -about, combo)

    for size in (1, 2):
        found = [
            combo
            for combo in combinations(sorted(indexes), size)
            if _supports([indexes[n] for n in combo], terms)
        ]
        if found:
            return list(min(found, key=preference))
    return None


def check_citations(
    answer: str, sources: Sequence[SourceText], question: str = ""
) -> CitationCheck:
    """Check each sentence of ``answer`` against the passages it cites; keep, re-cite or drop it.

    Marks outside 1..N are removed; marks citing passages that hold none of the sentence's terms
    are removed; marks end up just before the sentence's final punctuation. A sentence with no
    names or numbers, or only ones taken from the question, cannot be checked and is kept."""
    indexes = {s.n: TextIndex.of(f"{s.title} {s.text}") for s in sources}
    titles = {s.n: TextIndex.of(s.title) for s in sources}
    question_index = TextIndex.of(question) if question.strip() else None
    lowercase_words = frozenset(
        fold(w)
        for text in [question, *(f"{s.title} {s.text}" for s in sources)]
        for w in WORD.findall(text)
        if w[0].islower()
    )
    result = CitationCheck(answer="")
    parts: list[str] = []
    for sentence in split_cited_sentences(answer):
        body, end = _body_and_end(sentence)
        if not re.search(r"\w", body):
            continue
        result.sentences += 1
        cited = sorted({n for n in _marks(sentence) if n in indexes})
        terms = claims(body, lowercase_words)
        trivial = question_index is not None and all(question_index.has(t) for t in terms)
        if not terms or trivial:
            result.kept += 1
            parts.append(_render(body, end, cited))
        elif _supports([indexes[n] for n in cited], terms):
            result.kept += 1
            useful = [n for n in cited if any(indexes[n].has(t) for t in terms)]
            parts.append(_render(body, end, useful))
        elif (recited := _recite(terms, indexes, titles, cited)) is not None:
            result.recited += 1
            parts.append(_render(body, end, recited))
        else:
            result.dropped += 1
            result.dropped_sentences.append(sentence)
    result.answer = " ".join(parts)
    result.cited = sorted({n for part in parts for n in _marks(part)})
    return result


# --- a comparison cites each side ----------------------------------------------------------


def sides(question: Question, sources: Sequence[SourceText]) -> list[str]:
    """What a comparison's answer should show a passage for: a choice's alternatives ("A or
    B?", ``Question.choices``); for a yes/no question ("Are A and B both American?", which
    offers no alternatives to parse), the shown passages' titles the question names ("Hanson
    (band)" read as "Hanson"), in the question's order; none for any other question."""
    if len(question.choices) >= 2:
        return list(question.choices)
    if not question.yes_no:
        return []
    named: dict[str, int] = {}
    folded = f" {normalize_answer_folded(question.text)} "
    for source in sources:
        name = without_aside(source.title).strip()
        key = normalize_answer_folded(name)
        at = folded.find(f" {key} ")
        if len(key) > 1 and at >= 0 and name not in named:
            named[name] = at
    return sorted(named, key=named.__getitem__)


def _side_sentence(side: str, source: SourceText, *, dated: bool) -> str | None:
    """The sentence of ``source`` that shows ``side``'s part of the comparison: the first naming
    it (with ``dated``, one holding a digit, its date or number, first), else the passage's
    first sentence when the title names it (a Wikipedia lead sentence says what its subject is
    and when); None when the passage does not name it."""
    sentences = split_sentences(source.text)
    naming = [s for s in sentences if contains_span(side, s)]
    if dated:
        naming = [s for s in naming if any(ch.isdigit() for ch in s)] + naming
    if naming:
        return naming[0]
    if sentences and contains_span(side, source.title):
        return sentences[0]
    return None


def cite_each_side(answer: str, sources: Sequence[SourceText], question: Question) -> str:
    """A comparison's answer cites a passage for each side (``sides``), so whoever reads it
    sees both, not only the one the reader named (issue 65 item 6: the 1.5B cites the passage
    of the alternative it picks and stops, and the free reader's "Yes" cites nothing). For
    each side no cited passage stands for, the sentence of the first shown passage naming it
    (``_side_sentence``; a dated one first when the question compares dates or numbers) is
    appended with that passage's mark. A side's passage is one titled by it when one was shown
    ("Hanson (band)", not "Tinted Windows", which names Taylor Hanson in passing), else any
    naming it. Unchanged without an answer, without sides, or when no shown passage names a
    missing side."""
    wanted = sides(question, sources)
    if not answer or not wanted:
        return answer
    by_n = {s.n: s for s in sources}
    cited = [by_n[n] for n in _marks(answer) if n in by_n]
    added: list[str] = []
    for side in wanted:
        titled = [s for s in sources if contains_span(side, s.title)]
        if titled:
            covered = any(s in titled for s in cited)
        else:
            covered = any(contains_span(side, s.text) for s in cited)
        if covered:
            continue
        for source in titled or sources:
            sentence = _side_sentence(side, source, dated=question.direction is not None)
            if sentence is not None:
                body, end = _body_and_end(sentence)
                added.append(_render(body, end or ".", [source.n]))
                cited.append(source)
                break
    return " ".join([answer, *added])


# --- the short answer ---------------------------------------------------------------------


def ground_short_answer(short: str, sources: Sequence[SourceText]) -> tuple[str, bool]:
    """Return ``(answer, grounded)``: the short answer as the passages word it, when they do.

    An answer found verbatim (after HotpotQA normalisation) is returned unchanged. Otherwise the
    passage window of about the answer's length with the best token F1 replaces it, if that F1
    is at least 0.5 ("Cain Ballroom" becomes "Cain's Ballroom": ``closest_window``)."""
    target = normalize_answer_folded(short)
    if not target:
        return "", False
    if target in YES_NO:
        return short, True
    if target in NO_ANSWER:
        return short, False
    texts = [(s.title, s.text) for s in sources]
    if any(contains_span(short, f"{t} {x}") for t, x in texts):
        return short, True
    score, window = closest_window(short, [p for pair in texts for p in pair])
    if score >= 0.5 and window:
        return window, True
    return short, False
