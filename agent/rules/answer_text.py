"""An answer's words against other text: whether it says it has none (``unknown_like``), only
restates its query's words (``restates``), which of a question's alternatives it names
(``pick_choice``), and the window of a passage that words it best (``closest_window``, by
HotpotQA's token F1). Pure functions of text; the answer's checks (``agent.checks``) apply them
to findings, drafts and shown passages."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from agent.rules.question import Question
from searchers.text import normalize_answer_folded, stem
from searchers.verification import NO_ANSWER

# draft answers that say "no answer" in more words than searchers.verification.NO_ANSWER holds
_UNKNOWN_WORDS = ("not provided", "not stated", "not specified", "cannot be determined", "unknown")


def unknown_like(answer: str) -> bool:
    """An empty draft, or one that says it has no answer ("unknown", "not stated")."""
    text = normalize_answer_folded(answer)
    return text in NO_ANSWER or any(word in text for word in _UNKNOWN_WORDS)


def restates(answer: str, query: str, *, offered: Sequence[str] | None = None) -> bool:
    """An answer made only of the query's own words answers nothing ("first performance of
    Tinted Windows" -> "Tinted Windows"), unless the query offers it as an alternative
    ("Who was older, A or B?" -> "B"). ``offered``: the alternatives, when the query is the
    question and they were read already (``Question.choices``); else ``query`` is read as a
    question of its own (a sub-query may offer them too)."""
    said = set(normalize_answer_folded(answer).split())
    if not said or not said <= set(normalize_answer_folded(query).split()):
        return False
    alternatives = Question.read(query).choices if offered is None else offered
    return not is_alternative(answer, alternatives)


def is_alternative(answer: str, options: Sequence[str]) -> bool:
    """The answer is one of the question's alternatives (``Question.choices``), after answer
    normalisation: exactly, not by overlap (``pick_choice`` also maps overlapping forms)."""
    target = normalize_answer_folded(answer)
    return bool(target) and any(normalize_answer_folded(o) == target for o in options)


def _contains(outer: str, inner: str) -> bool:
    return bool(inner) and f" {inner} " in f" {outer} "


def pick_choice(short: str, long: str, options: Sequence[str]) -> str:
    """Resolve the short answer to one of the question's alternatives (``options``,
    ``Question.choices``), as the question writes it: a direct match first, else the only
    alternative the long answer names; otherwise the short answer unchanged (it may be right in
    a form we cannot map)."""
    if not options:
        return short
    target = normalize_answer_folded(short)
    normalised = [normalize_answer_folded(o) for o in options]
    equal = [o for o, n in zip(options, normalised, strict=True) if n == target and target]
    if len(equal) == 1:
        return equal[0]
    overlapping = [
        o
        for o, n in zip(options, normalised, strict=True)
        if _contains(n, target) or _contains(target, n)
    ]
    if len(overlapping) == 1:
        return overlapping[0]
    said = normalize_answer_folded(long)
    named = [o for o, n in zip(options, normalised, strict=True) if _contains(said, n)]
    if len(named) == 1:
        return named[0]
    return short


def _f1_tokens(text: str) -> list[str]:
    """HotpotQA-normalised tokens, plural- and possessive-stripped so that "Cain Ballroom" and
    "Cains Ballroom" score a full match against "Cain's Ballroom" (whose "'s" HotpotQA's
    normalisation turns into a stray "s" token)."""
    return [stem(t) for t in normalize_answer_folded(text).split() if t != "s"]


def _f1(prediction: list[str], gold: list[str]) -> float:
    """HotpotQA's token F1."""
    common = sum((Counter(prediction) & Counter(gold)).values())
    if not common:
        return 0.0
    precision, recall = common / len(prediction), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def closest_window(answer: str, parts: Sequence[str]) -> tuple[float, str]:
    """(token F1, the window) of the run of words in ``parts`` about ``answer``'s length (two
    words either way) that best matches it; a shorter window wins a tie. (0.0, "") when no
    window shares a word with it."""
    gold = _f1_tokens(answer) or normalize_answer_folded(answer).split()
    wanted = set(gold)
    lengths = range(max(1, len(gold) - 2), len(gold) + 3)
    best: tuple[float, int, str] = (0.0, 0, "")
    for part in parts:
        words = part.split()
        tokens = [_f1_tokens(w) for w in words]
        for i in range(len(words)):
            if not wanted.intersection(tokens[i]):
                continue  # a window starting on a word the answer lacks can be trimmed: skip
            for length in lengths:
                if i + length > len(words):
                    break
                window = [t for ts in tokens[i : i + length] for t in ts]
                if not window:
                    continue
                score = _f1(window, gold)
                if score > best[0] or (score == best[0] and score and length < best[1]):
                    text = re.sub(r"^\W+|\W+$", "", " ".join(words[i : i + length]))
                    best = (score, length, text)
    return best[0], best[2]
