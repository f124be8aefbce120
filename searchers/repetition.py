"""Dropping what a small model repeats.

Greedy decoding on a 1.5B model falls into loops: a pseudo-document or a summary says one
sentence, or one phrase, then says it again until the token limit cuts it off. The repeats add
no fact and, in a pseudo-document, pull its embedding towards one phrase; in a tree summary they
crowd out the facts of the other passages. Sentences are compared on a normalized form (case,
punctuation and spacing ignored), so "It is in Paris." and "it is in Paris" count as one; a
phrase loop is found on words, since it need not end its sentences.
"""

from __future__ import annotations

import re

from searchers.text import split_sentences

_NOT_WORD = re.compile(r"[\W_]+")
_SENTENCE_END = ".!?…\"'”’)]"
MIN_LOOP_WORDS = 3  # a phrase this long or longer, said this many times in a row, is a loop
LOOP_TIMES = 3
LOOP_SCAN_WORDS = 1500  # model replies here are under 512 tokens; a loop is looked for this far


def _form(sentence: str) -> str:
    return _NOT_WORD.sub(" ", sentence.lower()).strip()


def _cut_phrase_loop(text: str) -> tuple[str, bool]:
    """(text, looped): the text cut after the first copy of a phrase that then comes
    ``LOOP_TIMES`` times in a row ("the names, Confederate sympathizers' inability to deface the
    names, Confederate …"). A loop need not end its sentences, so sentence comparison alone
    misses it; and only back-to-back copies count, because a summary of similar passages
    legitimately says "full-length album released by Starflyer 59" three times."""
    words = text.split()
    folded = [w.lower() for w in words[:LOOP_SCAN_WORDS]]  # the scan is quadratic: bound it
    n = len(folded)
    for start in range(n):
        for period in range(MIN_LOOP_WORDS, (n - start) // LOOP_TIMES + 1):
            copies = folded[start : start + LOOP_TIMES * period]
            if copies[:-period] == copies[period:]:  # each word equals the one a period on
                return " ".join(words[: start + period]), True
    return text, False


def drop_repetition(text: str, *, cut: bool = False) -> str:
    """``text`` without its loops: cut where a phrase starts to repeat (``_cut_phrase_loop``),
    and with every sentence after its first occurrence removed. With ``cut`` (the reply stopped
    at the token limit) or after a loop was cut, an unfinished last sentence goes too, unless it
    is all there is."""
    text, looped = _cut_phrase_loop(text)
    kept: list[str] = []
    seen: set[str] = set()
    for sentence in split_sentences(text):
        form = _form(sentence)
        if form and form in seen:
            continue
        seen.add(form)
        kept.append(sentence)
    if (cut or looped) and len(kept) > 1 and not kept[-1].endswith(tuple(_SENTENCE_END)):
        kept.pop()
    return " ".join(kept)
