"""The alternatives a question offers, and whether it asks yes or no.

A comparison question offers its alternatives in a few set ways ("Which band was formed first,
Tinted Windows or Hanson?", "Was Tinted Windows or Hanson formed first?", "Between Tinted Windows
and Hanson, which was formed first?"). The planner's query cleaning fills a copied "Y or Z"
pattern with them, the router plans a choice between two names, and the answer checks map a
short answer onto one of them and compute a comparison over their findings: all of them read
``Question.choices`` (``agent.rules.question``), which ``choices`` here writes. The evidence check
still applies ``choices`` to a planned query's own text (``evidence.restates``).
"""

from __future__ import annotations

import re

from agent.rules.names import YES_NO_START, capitalised_head, capitalised_tail
from searchers.text import fold

MAX_CHOICE_WORDS = 10


def opens_yes_no(question: str) -> bool:
    """Does the question open with a yes/no question's verb ("Are ...", "Did ...")?"""
    words = question.split()
    return bool(words) and fold(words[0]).strip("\"'") in YES_NO_START


def asks_yes_no(question: str) -> bool:
    """Does the question open like a yes/no question ("Are ...", "Did ...") and offer no
    alternatives ("Was A or B born first?" asks for A or B)? Measured with the "Was A or B"
    reading of ``choices`` (558d4eb): of the shared files' 1,037 questions, 12 offer such
    alternatives, every one a choice question, and they are no longer yes/no."""
    return opens_yes_no(question) and not choices(question)


def _named_pair(head: str, tail: str) -> list[str]:
    """[A, B] when ``head`` ends in a name and ``tail`` opens with one, else []."""
    pair = [capitalised_tail(head), capitalised_head(tail)]
    if not all(pair) or any(len(name.split()) > MAX_CHOICE_WORDS for name in pair):
        return []
    return pair


# "Between A and B, who ...", "Among A and B who ...", "Of the players A and B, which ...",
# "Who was born first out of A and B?": two names joined by "and" offered as the choice
_AND_CUE = re.compile(r"^(?:in\s+)?(?:between|among|amongst|of)\s+", re.IGNORECASE)
_AND_CUE_AFTER = re.compile(
    r"\b(?:first|earlier|later|older|younger|oldest|youngest)\s+(?:out\s+of|among|between)\s+",
    re.IGNORECASE,
)
_ASKS_WHICH = re.compile(r"\b(?:who|whom|which)\b", re.IGNORECASE)


def _and_choices(text: str) -> list[str]:
    """The two alternatives of a question that offers them joined by "and" (see the cues
    above); a question that only names two things ("What sport do A and B play?") gives []."""
    cue = _AND_CUE.match(text) or _AND_CUE_AFTER.search(text)
    if cue is None or not _ASKS_WHICH.search(text):
        return []
    rest = text[cue.end() :]
    joined = re.search(r"\s+and\s+", rest)
    if joined is None:
        return []
    return _named_pair(rest[: joined.start()], rest[joined.end() :])


def _yes_no_choices(text: str) -> list[str]:
    """ "Was Pepper Keenan or Rob Parissi born first?": a question that opens like a yes/no one
    and offers two names joined by one "or" (measured on HotpotQA and 2Wiki: 7 of the 8 such
    questions of the shared files answer with a name). Lowercase alternatives ("known by
    multiple names or nicknames?") and lists with commas stay yes/no questions."""
    body = text.split(" ", 1)[1] if " " in text else ""
    ors = list(re.finditer(r"\s+or\s+", body))
    if len(ors) != 1 or "," in body[: ors[0].start()]:
        return []
    return _named_pair(body[: ors[0].start()], body[ors[0].end() :])


def _closing_alternative(text: str) -> str:
    """The last alternative: the text after the last "or", up to the question mark or to a
    comma that opens the rest of the question. That comma comes before a lowercase word
    ("Which band, A or B, had more members?", "A or B, the 1970 documentary?"); before a
    capitalised one it is inside a title ("That Devil, Bateese", "McFarland, USA")."""
    text = text.strip().rstrip("?").rstrip()
    for comma in re.finditer(r",\s+", text):
        if text[comma.end() :][:1].islower():
            return text[: comma.start()].strip()
    return text


# Where the question's own words end and its alternatives begin: the first comma or colon
# after the question word that is followed by a name (capitalised, a digit, a quote, or an
# article before one). "Which film was released earlier, Yohan: The Child Wanderer or ...":
# the comma, not the title's colon; "In Tulsa, Oklahoma, which band ..., A or B?": not the
# comma before "Oklahoma".
_OPENING_END = re.compile(r"[,:]\s*")
_QUESTION_WORD = re.compile(r"\b(?:which|who|whom|whose|what)\b", re.IGNORECASE)
# A lowercase name a software manual writes: an identifier with an underscore, a digit or a dot
# inside ("mod_http2", "httpd.conf"), which the capitalised-name rule above cannot see.
_IDENTIFIER = re.compile(r"[a-z][\w-]*(?:[_\d.][\w-]*)+\b")


def _opening_end(head: str) -> int | None:
    asked = _QUESTION_WORD.search(head)
    start = asked.end() if asked else 1
    for found in _OPENING_END.finditer(head, start):
        rest = head[found.end() :]
        if not rest[:1].isalpha() or rest[:1].isupper() or re.match(r"(?:the|a|an)\s+\S", rest):
            return found.end()
        if _IDENTIFIER.match(rest):
            return found.end()
    return None


def choices(question: str) -> list[str]:
    """The alternatives a comparison question offers, as written: "Which band was formed first,
    Tinted Windows or Hanson?" gives ["Tinted Windows", "Hanson"]; so do "Was Tinted Windows or
    Hanson formed first?" and "Between Tinted Windows and Hanson, which was formed first?".
    Yes/no questions ("Are X and Y both ...?") and questions without such a pattern give [].

    Measured: a title with a comma or colon is one alternative ("That Devil, Bateese", "Yohan:
    The Child Wanderer"; 9f7d362): replayed on 2Wiki's report rows 1-44 it mended 3 answers,
    F1 55.3 -> 59.4, and changed no other recorded row (``evals/results/HISTORY.md``, sixth
    session). The "Was A or B" and "Between A and B" readings (558d4eb) found the alternatives
    of 12 of the shared files' 1,037 questions, all of them choice questions."""
    text = " ".join(question.split())
    if not text:
        return []
    if opens_yes_no(text):
        return _yes_no_choices(text)
    match = list(re.finditer(r"\s+or\s+", text))
    if not match:
        return _and_choices(text)
    last_or = match[-1]
    after = _closing_alternative(text[last_or.end() :])
    before = text[: last_or.start()].rstrip()
    serial = before.endswith(",")  # "A, B, or C": a list
    head = before.rstrip(",")
    opened = _opening_end(head)
    if opened is None:
        pieces = [capitalised_tail(head)]
    elif serial:
        pieces = head[opened:].split(",")
    else:
        # Without a serial comma a comma belongs to a title: measured on the shared files, 9
        # questions offer a title with a comma ("That Devil, Bateese", "University of
        # California, Berkeley", "Heads I Win, Tails You Lose") and none a list "A, B or C".
        pieces = [head[opened:]]
    alternatives = [*(p for piece in pieces for p in re.split(r"\s+or\s+", piece)), after]
    alternatives = [re.sub(r"^(?:either|or)\s+", "", a.strip(), flags=re.I) for a in alternatives]
    alternatives = [a.strip(" \"'") for a in alternatives]
    if len(alternatives) < 2 or not all(alternatives):
        return []
    if any(len(a.split()) > MAX_CHOICE_WORDS for a in alternatives):
        return []
    return alternatives
