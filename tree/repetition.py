"""Dropping the sentences a small model repeats.

Greedy decoding on a 1.5B model falls into loops: a pseudo-document or a summary says one
sentence, then says it again until the token limit cuts it off. The repeats add no fact and, in
a pseudo-document, pull its embedding towards one phrase; in a tree summary they crowd out the
facts of the other passages. Comparison is on a normalized form (case, punctuation and spacing
ignored), so "It is in Paris." and "it is in Paris" count as one sentence.
"""

from __future__ import annotations

import re

from tree.leaves import split_sentences

_NOT_WORD = re.compile(r"[\W_]+")
_SENTENCE_END = ".!?…\"'”’)]"


def _form(sentence: str) -> str:
    return _NOT_WORD.sub(" ", sentence.lower()).strip()


def drop_repeated_sentences(text: str, *, cut: bool = False) -> str:
    """``text`` with every sentence after its first occurrence removed. With ``cut`` (the reply
    stopped at the token limit) an unfinished last sentence goes too, unless it is all there is."""
    kept: list[str] = []
    seen: set[str] = set()
    for sentence in split_sentences(text):
        form = _form(sentence)
        if form and form in seen:
            continue
        seen.add(form)
        kept.append(sentence)
    if cut and len(kept) > 1 and not kept[-1].endswith(tuple(_SENTENCE_END)):
        kept.pop()
    return " ".join(kept)
