"""The names a question writes: runs of capitalised words, with the lowercase connectors a name
may hold ("Corrosion of Conformity", "Ludwig van Beethoven").

Read by the alternatives rule (the names an "A or B?" question offers), by the planner's query
cleaning (a query that is only a name the question writes) and by the citation check (a name
grounded in a passage). Rules applied to any text, not only the question.
"""

from __future__ import annotations

from searchers.text import fold

# Lowercase words that may sit inside a name ("Corrosion of Conformity", "Ludwig van Beethoven").
NAME_CONNECTORS = frozenset("of the de da del della der den van von la le du des di for".split())

# Words that open a question, never a name: a yes/no question's verb ("Was ...") and the
# question words ("Which ...").
YES_NO_START = frozenset("is are was were do does did can could has have had".split())
QUESTION_WORDS = frozenset("which who whom whose what where when how why".split())


def capitalised(word: str) -> bool:
    """A word that may belong to a name: it opens with a capital or a digit."""
    return word[:1].isupper() or word[:1].isdigit()


def capitalised_tail(text: str) -> str:
    """The run of capitalised words (with name connectors) that ends ``text``: the first
    alternative of a question written without a comma ("...started first Arthur's Magazine").
    A run that opens with a question word or a yes/no verb is no name ("")."""
    words = text.split()
    start = len(words)
    while start > 0:
        word = words[start - 1]
        inside = start < len(words) and fold(word) in NAME_CONNECTORS
        if not (capitalised(word) or inside):
            break
        start -= 1
    while start < len(words) and fold(words[start]) in NAME_CONNECTORS:
        start += 1
    if start < len(words) and fold(words[start]) in QUESTION_WORDS | YES_NO_START:
        return ""
    return " ".join(words[start:])


def capitalised_head(text: str, skip: int = 2) -> str:
    """The run of capitalised words (with name connectors) that opens ``text``, after at most
    ``skip`` lowercase words ("the band The Dear Hunter come from" -> "The Dear Hunter")."""
    words = text.split()
    start = 0
    while start < min(skip, len(words)) and not capitalised(words[start]):
        start += 1
    end = start
    while end < len(words):
        word = words[end].rstrip(",?")
        inside = end > start and fold(word) in NAME_CONNECTORS
        if not (capitalised(word) or inside):
            break
        end += 1
        if words[end - 1] != word:  # the name ends at its comma or question mark
            break
    while end > start and fold(words[end - 1].rstrip(",?")) in NAME_CONNECTORS:
        end -= 1
    if start < end and fold(words[start]) in QUESTION_WORDS:
        return ""
    return " ".join(w.rstrip(",?") for w in words[start:end])
