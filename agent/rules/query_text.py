"""The English rules that read a planned query's words, alone or against the question's: its
key, whether it names anything, describes a named thing or only names it, asks a relation the
question asks, repeats an earlier query, and what a finding fills into its ``#n``. Pure
functions over strings; the planner's query cleaning (``agent.planner.queries``) applies them
to a plan, the plan (``agent.planner.plan``) reads ``names_nothing``."""

from __future__ import annotations

import re

from agent.rules.names import NAME_CONNECTORS
from searchers.text import fold

# A reference to an earlier query's answer: "birth year of #1".
REF = re.compile(r"#(\d{1,2})\b")

_QUERY_FILLER = frozenset(
    "a an the of in on at to for by and or is was are were what which who whom whose when where "
    "how did does do please find search".split()
)
_NON_WORD = re.compile(r"[^\w]+")


def query_key(query: str) -> str:
    """Two wordings of one query share a key: case, punctuation, filler and order ignored."""
    words = {w for w in _NON_WORD.split(query.casefold()) if w and w not in _QUERY_FILLER}
    return " ".join(sorted(words))


def similar_queries(a: str, b: str) -> bool:
    """Two queries that ask the same thing: their content words mostly coincide."""
    x, y = set(query_key(a).split()), set(query_key(b).split())
    return bool(x and y) and len(x & y) / len(x | y) >= 0.6


# quotes a planned query may drop or change around a title the question quotes
QUOTE = r"[\"'‘’“”`]?"


def loose_words(text: str) -> list[str]:
    """``text``'s words with quotes and spacing left out."""
    return [w for w in re.split(r"[\s\"'‘’“”`]+", text) if w]


def loose_pattern(words: list[str]) -> str:
    """A pattern matching ``words`` in order whatever quotes or spacing stand between them."""
    return r"[\s\"'‘’“”`]*".join(re.escape(w) for w in words)


def _occurrence(query: str, question: str) -> tuple[int, int] | None:
    """Where the question writes ``query`` (quotes and spacing aside, any case), or None."""
    words = loose_words(query)
    if not words:
        return None
    match = re.search(loose_pattern(words) + QUOTE, question, flags=re.IGNORECASE)
    return match.span() if match else None


def bare_name(query: str, question: str) -> str | None:
    """The question's own spelling of ``query`` when the query is nothing but a name the
    question writes ("Cooperative Living Organization", "frances vane, marchioness of
    londonderry" for "Frances Vane, Marchioness Of Londonderry"), else None."""
    text, wanted = " ".join(question.split()), " ".join(query.split())
    at = text.casefold().find(wanted.casefold())
    if at < 0 or not wanted:
        return None
    span = text[at : at + len(wanted)]
    words = [w.strip(",.'\"()") for w in span.split()]
    named = all(
        not w or w[0].isupper() or w[0].isdigit() or fold(w) in NAME_CONNECTORS | {"and"}
        for w in words
    )
    return span.strip(" ,") if named and words and words[0][:1].isupper() else None


# a description: a thing named through its relation to another ("performer of X", "the band
# that released X", "city where X died"), not a bare name or a title ("young and restless")
_DESCRIBES = re.compile(r"\s(?:of|that|which|who|whom|whose|where|by|in)\s", re.IGNORECASE)


def describes(query: str, question: str) -> bool:
    """``query`` describes a named thing: a relation word inside it, a name, number or title
    the question also writes (``names_nothing``: "professional sports team" describes nothing
    a search can find), and not only a name."""
    return (
        bool(_DESCRIBES.search(f" {query} "))
        and not names_nothing(query, question)
        and not bare_name(query, question)
    )


def generic(query: str) -> bool:
    """A query of one lower-case word ("city"): measured on MuSiQue, the planner wrote "city"
    for "the city sharing a border with ...", and its search found an unrelated Oklahoma City
    whose county then answered the question."""
    words = [w for w in query.split() if query_key(w)]
    return len(words) <= 1 and not any(w[:1].isupper() or w[:1].isdigit() for w in words)


# What makes a query name something: a capitalized word, a number, an opening quote or ``#n``.
_NAMES = re.compile(r"#\d|[A-Z0-9]|(?:^|\s)[\"'‘“`]")


def names_nothing(query: str, question: str) -> bool:
    """A query with no name, number, quoted title or ``#n`` in a question that has one
    ("originates from", "year of overlap", "river that flows next to"): the local model writes
    such fragments for HotpotQA's bridge questions, and whatever its search finds is not tied
    to the question's chain. A question written all in lower case (after its first word) gives
    nothing to judge by, so no query of it is flagged."""
    words = question.split(maxsplit=1)
    rest = words[1] if len(words) > 1 else ""
    return bool(_NAMES.search(rest)) and not _NAMES.search(query)


# Words a hop may use for a relation the question words otherwise: "Where was X born?" plans
# "place of birth of #1". Keys and values are 5-letter prefixes of the words.
_RELATION_WORDS: dict[str, tuple[str, ...]] = {
    "where": ("place", "locat", "city", "count", "town", "state", "regio", "birth", "death"),
    "when": ("date", "year", "time", "day", "centu", "decad", "birth", "death"),
    "who": ("perso", "name"),
    "born": ("birth",),
    "birth": ("born",),
    "died": ("death",),
    "die": ("death",),
    "death": ("died", "die"),
    "marri": ("spous", "wife", "husba"),
    "spous": ("marri", "wife", "husba"),
    "wife": ("spous", "marri"),
    "husba": ("spous", "marri"),
    "wrote": ("autho", "write"),
    "older": ("birth", "born", "date", "age"),
    "young": ("birth", "born", "date", "age"),
    "first": ("date", "year", "relea", "birth", "found", "start", "open"),
    "earli": ("date", "year", "relea", "birth", "found", "start", "open"),
    "later": ("date", "year", "relea", "birth", "found", "start", "open"),
    "longe": ("birth", "death", "lengt", "durat"),
    "natio": ("count", "citiz"),
    "count": ("natio", "citiz"),
    "many": ("numbe", "count", "popul", "total"),
    "much": ("numbe", "amoun", "cost", "price"),
    "how": ("numbe", "count"),
    "seat": ("capit",),
    "capit": ("seat",),
    "broth": ("sibli",),
    "siste": ("sibli",),
    "owns": ("owner",),
    "own": ("owner",),
    "atten": ("educa", "schoo", "unive", "colle"),
    "studi": ("educa", "schoo", "unive", "colle"),
    "span": ("time", "perio", "durat", "year", "date"),
    "perio": ("time", "durat", "year", "date"),
}


def relation_in_question(query: str, question: str) -> bool:
    """Does a hop's relation ("place of birth of #1") come from the question? Its words,
    ``#n`` aside, must share a 5-letter prefix with the question's words, directly or
    through a word that names the same relation (``_RELATION_WORDS``). Measured on MuSiQue,
    the planner copied its examples' relations: "capital of #2" ended a chain the question
    had finished a hop earlier, and the chain's answer became a list of cities."""
    asked = {w[:5] for w in re.findall(r"[a-z0-9]+", question.casefold())}
    allowed = asked | {r for w in asked for r in _RELATION_WORDS.get(w, ())}
    words = [w[:5] for w in query_key(REF.sub(" ", query)).split() if not w.isdigit()]
    return not words or any(w in allowed for w in words)


MIN_IMPLICIT_WORDS = 3


def implicit_refs(query: str, earlier: list[str]) -> str:
    """``query`` with the words of an earlier query it repeats replaced by ``#n``: the local
    model often writes "river next to the town where X comes from" after planning "town where X
    comes from", where it meant "river next to #2". Quotes and case are ignored; the longest
    earlier query is tried first, and only queries of three words or more."""
    order = sorted(range(len(earlier)), key=lambda n: -len(earlier[n]))
    for n in order:
        words = loose_words(earlier[n])
        if len(words) < MIN_IMPLICIT_WORDS or REF.search(earlier[n]):
            continue
        pattern = QUOTE + loose_pattern(words) + QUOTE
        replaced = re.sub(pattern, f"#{n + 1}", query, count=1, flags=re.IGNORECASE)
        if replaced != query and replaced.strip() != f"#{n + 1}":
            query = replaced
    return query


_ARTICLES = frozenset({"the", "a", "an"})
MIN_RESIDUAL_WORDS = 2


def residual_query(
    queries: list[str], needs: list[set[int]], question: str
) -> tuple[int, str] | None:
    """(k, the residual hop) for a plan's ``queries`` (``needs[i]``: the 0-based queries query
    i builds on), or None (``agent.planner.queries.residual_hop``). Query k is the last whose
    words the question writes as a noun phrase ("the author of ..."), a description of a named
    thing (``describes``) of three words or more that no query builds on and that builds on
    none; the hop is the question with that span replaced by ``#k+1``, unless less than two
    words are left to ask ("Name a #1?"). Apart from ``residual_hop`` so that a recorded plan,
    whose links are recorded and whose ``#n`` were filled with answers, is judged the same."""
    text = " ".join(question.split())
    used = {n for links in needs for n in links}
    for k in range(len(queries) - 1, -1, -1):
        query = queries[k]
        # a query holding "?" is a question copied whole (a story question with its
        # options after it), not a description inside one
        if k in used or needs[k] or len(query.split()) < MIN_IMPLICIT_WORDS or "?" in query:
            continue
        span = _occurrence(query, text)
        if span is None or not describes(query, text):
            continue
        # a noun phrase of the question ("sung by the performer of X"), not a clause of it
        # ("who was part of the rivalry", "is set in Bikini Bottom")
        before = text[: span[0]].split()
        if not before or before[-1].casefold() not in _ARTICLES:
            continue
        rest = " ".join(f"{text[: span[0]]}#{k + 1}{text[span[1] :]}".split())
        # something left to ask besides the description ("Name a #1?" asks nothing)
        if len(query_key(REF.sub(" ", rest)).split()) < MIN_RESIDUAL_WORDS:
            return None
        return k, rest
    return None


# A finding filled into the hop that needs it: a name with its titles ("Louis Philippe Marie
# Alexandre Berthier, 3rd Prince of Wagram", 9 words, was refused at 8 on 2Wiki's tuning rows)
# but not a sentence.
MAX_FILL_WORDS = 12
_TRAILING_ASIDE = re.compile(r"\s*\([^()]*\)\s*$")


def without_aside(text: str) -> str:
    """``text`` without a trailing parenthetical aside: "Hanson (band)" is "Hanson", "Jörgen
    Smit (July 21, 1916 ...)" is "Jörgen Smit"."""
    return _TRAILING_ASIDE.sub("", text)


def fill_value(answer: str) -> str:
    """What a finding puts in place of ``#n``: the finding without a trailing aside ("Jörgen
    Smit (July 21, 1916 in Bergen – May 10, 1991 in Arlesheim)" is searched as "Jörgen Smit"),
    or "" for a yes/no or a finding too long to be a name."""
    name = without_aside(answer).strip(" ,;") or answer.strip()
    if query_key(name) in {"yes", "no", ""} or len(name.split()) > MAX_FILL_WORDS:
        return ""
    return name
