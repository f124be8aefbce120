"""The planner's atomic queries as text: cleaning what the model planned, dropping copied
patterns, turning repeated text into ``#n`` references and filling answers into them. Shared by
the decompose and verify nodes; no LLM call here. Which queries are open, answered or ready is
the plan's to say (``agent.planner.plan``), where they go the router's
(``agent.planner.routing``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from agent.planner.examples import copies_an_example
from agent.planner.state import SubQuery, query_key
from agent.rules.names import NAME_CONNECTORS
from agent.rules.question import Question
from searchers.text import fold

MAX_QUERIES_PER_CALL = 6


MAX_QUERY_CHARS = 300


REF = re.compile(r"#(\d{1,2})\b")


PLACEHOLDER = re.compile(r"\b[YZ]\b")


def clean_queries(raw: list[str], asked: set[str], limit: int) -> list[tuple[str, str]]:
    """(query, key) pairs: trimmed, non-empty, not asked before (after normalization)."""
    kept: list[tuple[str, str]] = []
    for text in raw:
        query = " ".join(str(text).split())[:MAX_QUERY_CHARS]
        key = query_key(query)
        if not key or key in asked:
            continue
        asked.add(key)
        kept.append((query, key))
        if len(kept) >= limit:
            break
    return kept


_TIME_WORD = re.compile(r"\b(date|year)\b", re.IGNORECASE)


def on_topic(pairs: list[tuple[str, str]], question: Question) -> list[tuple[str, str]]:
    """The planned queries that are about the question: each shares a content word with it,
    or builds on such a query through ``#n``. The local model sometimes copies the prompt's
    pattern ("director of X") instead of the question's names; searching that wastes a round
    and, worse, its answer would be filled into the queries that build on it. It also copies
    the pattern's relation: measured on 2Wiki (v3, questions 51-100), "Where was the director
    of film X born?" was planned as "birth date of #1" again and again, so a hop that asks for a
    date or year in a question that asks where (``Question.asks_where``) asks for the place
    instead. A copied "Y or Z" is filled with the question's alternatives (``Question.choices``)."""
    text = question.text
    words = set(query_key(text).split())
    offered = question.choices
    prefixes = {w[:5] for w in words}  # "founder" passes for a question that says "founded"
    kept: list[tuple[str, str]] = []
    numbers: dict[int, int] = {}  # position in the plan as written -> position kept
    for i, (query, key) in enumerate(pairs, start=1):
        if len(offered) >= 2:  # the prompt's "Y or Z" pattern, copied: fill in the real names
            query = PLACEHOLDER.sub(lambda m: offered[ord(m.group(0)) - ord("Y")], query)
            key = query_key(query)
        refs = {int(n) for n in REF.findall(query)}
        if refs and not refs <= set(numbers):
            continue  # builds on a query that was dropped
        if refs and question.asks_where and _TIME_WORD.search(query):
            # the prompt's "birth year of #1", copied into "Where was ... born?"
            query = _TIME_WORD.sub("place", query)
            key = query_key(query)
        if refs and not relation_in_question(query, text):
            continue  # an example's relation ("capital of #2"), not one the question asks
        if not refs and not words & set(key.split()):
            continue
        if not refs and generic(query):
            continue  # "city", "the capitol": a bare noun names nothing to search for
        if copies_an_example(query, text):
            continue  # a made-up name of the prompt's examples, not one the question names
        if any(w in key.split() and w[:5] not in prefixes for w in PATTERN_WORDS):
            continue  # the prompt's example relation, copied into an unrelated question
        renumbered = REF.sub(lambda m: f"#{numbers.get(int(m.group(1)), 0)}", query)
        numbers[i] = len(kept) + 1
        kept.append((renumbered, key))
    return kept


def _bare_name(query: str, question: str) -> str | None:
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


def inline_bare_names(pairs: list[tuple[str, str]], question: str) -> list[tuple[str, str]]:
    """Plans without a hop that only names a thing: measured on v4's HotpotQA and 2Wiki rows,
    the planner wrote "Cooperative Living Organization", then "city where #1 is located";
    the first query has no relation to answer, so its "finding" (a description, or nothing)
    was filled into the hop that needed it, or the chain stopped there. The name itself goes
    into the queries that build on it, and the bare query is dropped."""
    names: dict[int, str] = {}
    for i, (query, _) in enumerate(pairs, start=1):
        if REF.search(query):
            continue
        referenced = any(int(n) == i for later, _ in pairs[i:] for n in REF.findall(later))
        name = _bare_name(query, question) if referenced else None
        if name:
            names[i] = name
    if not names:
        return pairs
    kept: list[tuple[str, str]] = []
    numbers: dict[int, int] = {}
    for i, (query, _key) in enumerate(pairs, start=1):
        if i in names:
            continue

        def fill(match: re.Match[str]) -> str:
            n = int(match.group(1))
            return names[n] if n in names else f"#{numbers.get(n, 0)}"

        query = REF.sub(fill, query)
        numbers[i] = len(kept) + 1
        kept.append((query, query_key(query)))
    return kept


# quotes a planned query may drop or change around a title the question quotes
_QUOTE = r"[\"'‘’“”`]?"


def _loose_words(text: str) -> list[str]:
    """``text``'s words with quotes and spacing left out."""
    return [w for w in re.split(r"[\s\"'‘’“”`]+", text) if w]


def _loose_pattern(words: list[str]) -> str:
    """A pattern matching ``words`` in order whatever quotes or spacing stand between them."""
    return r"[\s\"'‘’“”`]*".join(re.escape(w) for w in words)


def _occurrence(query: str, question: str) -> tuple[int, int] | None:
    """Where the question writes ``query`` (quotes and spacing aside, any case), or None."""
    words = _loose_words(query)
    if not words:
        return None
    match = re.search(_loose_pattern(words) + _QUOTE, question, flags=re.IGNORECASE)
    return match.span() if match else None


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
        and not _bare_name(query, question)
    )


_ARTICLES = frozenset({"the", "a", "an"})
MIN_RESIDUAL_WORDS = 2


def residual_query(
    queries: list[str], needs: list[set[int]], question: str
) -> tuple[int, str] | None:
    """(k, the residual hop) for a plan's ``queries`` (``needs[i]``: the 0-based queries query
    i builds on), or None; see ``residual_hop``. Apart from it so that a recorded plan, whose
    links are recorded and whose ``#n`` were filled with answers, is judged the same way."""
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


def _links(queries: list[str]) -> list[set[int]]:
    """For each planned query, the 0-based earlier queries it builds on: its ``#n`` and the
    repeated words ``implicit_refs`` reads as one."""
    linked = [implicit_refs(q, queries[:i]) for i, q in enumerate(queries)]
    return [{int(n) - 1 for n in REF.findall(q)} for q in linked]


def residual_hop(pairs: list[tuple[str, str]], question: str, limit: int) -> list[tuple[str, str]]:
    """A chain's last hop asked as the question itself, with the description an earlier query
    resolves replaced by its ``#n``. Measured on MuSiQue's tuning plans (the planning
    benchmark): the 1.5B planner found the bridge ("author of The Canon of Medicine") and then
    planned the rest without it ("Venus"; "True Grit" for "Who did the cast member of Rooster
    Cogburn play in True Grit?"), so no query built on the bridge and the chain could not
    resolve. When the last query whose words the question writes, a description of a named
    thing (``describes``) of three words or more that the question writes as a noun phrase
    ("the author of ..."), is one no later query builds on (``#n`` or its repeated words) and
    builds on none, the question with that span replaced by ``#n`` is added as the last hop.
    No call; nothing is added when the plan is full, when less than two words of the question
    are left to ask ("Name a #1?"), or when the same query is planned already."""
    if not pairs or len(pairs) >= limit:
        return pairs
    queries = [q for q, _ in pairs]
    found = residual_query(queries, _links(queries), question)
    if found is None:
        return pairs
    key = query_key(found[1])
    if not key or key in {k for _, k in pairs}:
        return pairs
    return [*pairs, (found[1], key)]


def kept_queries(raw: list[str], question: Question, limit: int) -> list[tuple[str, str]]:
    """The model's planned queries the decompose node keeps: cleaned, on the question's topic,
    bare names folded into the hops that build on them."""
    on = on_topic(clean_queries(raw, set(), limit), question)
    return inline_bare_names(on, question.text)


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


def plan_sub_queries(
    pairs: list[tuple[str, str]], start: int, origin: str
) -> tuple[list[SubQuery], list[SubQuery]]:
    """(ready, waiting): a query naming ``#n`` of an earlier query of the same plan waits for
    that answer; a reference to itself, a later query or no query at all is dropped."""
    ready: list[SubQuery] = []
    waiting: list[SubQuery] = []
    for i, (query, key) in enumerate(pairs):
        own = start + i + 1
        query = implicit_refs(query, [q for q, _ in pairs[:i]])
        refs = sorted({int(n) for n in REF.findall(query)})
        needs = [f"q{start + n}" for n in refs if 1 <= n < i + 1]
        if len(needs) < len(refs):  # a dangling reference: drop the marks it left
            query = " ".join(drop_dangling(query, {int(r[1:]) - start for r in needs}).split())
        sub = SubQuery(
            id=f"q{own}", query=query, round=0, origin=origin, key=key, needs=needs, replaces=None
        )
        (waiting if needs else ready).append(sub)
    return ready, waiting


MIN_IMPLICIT_WORDS = 3


# The decompose prompt's example relation: the model copies "founder of <name>" into questions
# about no founder ("founder of Qazi", "founder of Los Angeles Dogers" in v3's HotpotQA rows).
PATTERN_WORDS = ("founder",)


def implicit_refs(query: str, earlier: list[str]) -> str:
    """``query`` with the words of an earlier query it repeats replaced by ``#n``: the local
    model often writes "river next to the town where X comes from" after planning "town where X
    comes from", where it meant "river next to #2". Quotes and case are ignored; the longest
    earlier query is tried first, and only queries of three words or more."""
    order = sorted(range(len(earlier)), key=lambda n: -len(earlier[n]))
    for n in order:
        words = _loose_words(earlier[n])
        if len(words) < MIN_IMPLICIT_WORDS or REF.search(earlier[n]):
            continue
        pattern = _QUOTE + _loose_pattern(words) + _QUOTE
        replaced = re.sub(pattern, f"#{n + 1}", query, count=1, flags=re.IGNORECASE)
        if replaced != query and replaced.strip() != f"#{n + 1}":
            query = replaced
    return query


def drop_dangling(query: str, valid: set[int]) -> str:
    return REF.sub(lambda m: m.group(0) if int(m.group(1)) in valid else "", query)


def conversation_text(history: list[dict[str, str]]) -> str:
    if not history:
        return ""
    turns = "\n".join(
        f"- Q: {t['question']} A: {t.get('short_answer') or '(no answer)'}" for t in history[-3:]
    )
    return f"Earlier in this conversation:\n{turns}\n\n"


# A finding filled into the hop that needs it: a name with its titles ("Louis Philippe Marie
# Alexandre Berthier, 3rd Prince of Wagram", 9 words, was refused at 8 on 2Wiki's tuning rows)
# but not a sentence.
MAX_FILL_WORDS = 12
_TRAILING_ASIDE = re.compile(r"\s*\([^()]*\)\s*$")


def fill_value(answer: str) -> str:
    """What a finding puts in place of ``#n``: the finding without a trailing aside ("Jörgen
    Smit (July 21, 1916 in Bergen – May 10, 1991 in Arlesheim)" is searched as "Jörgen Smit"),
    or "" for a yes/no or a finding too long to be a name."""
    name = _TRAILING_ASIDE.sub("", answer).strip(" ,;") or answer.strip()
    if query_key(name) in {"yes", "no", ""} or len(name.split()) > MAX_FILL_WORDS:
        return ""
    return name


def spell_out(
    sub: SubQuery,
    subs: Mapping[str, SubQuery],
    answer_of: Callable[[str], str | None] | None = None,
) -> SubQuery:
    """``sub`` with each ``#n`` replaced by that query's supported answer (``answer_of``, the
    plan's), or by its own words where there is no answer to fill in: with findings switched
    off (every query goes out at once) or when the answer is a yes/no or a sentence rather
    than a name."""

    def fill(match: re.Match[str]) -> str:
        qid = f"q{match.group(1)}"
        answer = answer_of(qid) if answer_of is not None else None
        name = fill_value(answer) if answer else ""
        if name:
            return name
        return f"({subs[qid]['query']})" if qid in subs else ""

    query = " ".join(REF.sub(fill, sub["query"]).split())[:MAX_QUERY_CHARS]
    return SubQuery(**{**sub, "query": query, "key": query_key(query) or sub["key"]})


def similar_queries(a: str, b: str) -> bool:
    """Two queries that ask the same thing: their content words mostly coincide."""
    x, y = set(query_key(a).split()), set(query_key(b).split())
    return bool(x and y) and len(x & y) / len(x | y) >= 0.6
