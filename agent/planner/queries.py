"""The planner's atomic queries as text: cleaning what the model planned, dropping copied
patterns, turning repeated text into ``#n`` references and filling answers into them. Shared by
the decompose and verify nodes; no LLM call here. Which queries are open, answered or ready is
the plan's to say (``agent.planner.plan``), where they go the router's
(``agent.planner.routing``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from agent.planner.examples import copies_an_example
from agent.planner.state import SubQuery
from agent.rules.query_text import (
    REF,
    bare_name,
    fill_value,
    generic,
    implicit_refs,
    query_key,
    relation_in_question,
    residual_query,
)
from agent.rules.question import Question

MAX_QUERIES_PER_CALL = 6
MAX_QUERY_CHARS = 300
# the decompose prompt's "Y or Z" placeholders, copied into a plan
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
    or builds on such a query through ``#n``; copies of the prompt's patterns and relations
    are dropped. A hop that asks for a date or year in a question that asks where
    (``Question.asks_where``) asks for the place; a copied "Y or Z" is filled with the
    question's alternatives (``Question.choices``)."""
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


def inline_bare_names(pairs: list[tuple[str, str]], question: str) -> list[tuple[str, str]]:
    """Plans without a hop that only names a thing ("Cooperative Living Organization", then
    "city where #1 is located": the first has no relation to answer): the name itself goes
    into the queries that build on it, and the bare query is dropped."""
    names: dict[int, str] = {}
    for i, (query, _) in enumerate(pairs, start=1):
        if REF.search(query):
            continue
        referenced = any(int(n) == i for later, _ in pairs[i:] for n in REF.findall(later))
        name = bare_name(query, question) if referenced else None
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


def _links(queries: list[str]) -> list[set[int]]:
    """For each planned query, the 0-based earlier queries it builds on: its ``#n`` and the
    repeated words ``implicit_refs`` reads as one."""
    linked = [implicit_refs(q, queries[:i]) for i, q in enumerate(queries)]
    return [{int(n) - 1 for n in REF.findall(q)} for q in linked]


def residual_hop(pairs: list[tuple[str, str]], question: str, limit: int) -> list[tuple[str, str]]:
    """A chain's last hop asked as the question itself, with the description an earlier query
    resolves replaced by its ``#n`` (``residual_query``), when the planner found the bridge
    ("author of The Canon of Medicine") and planned the rest without it ("Venus"). No call;
    nothing is added when the plan is full or the same query is planned already."""
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


# The decompose prompt's example relation: the model copies "founder of <name>" into questions
# about no founder ("founder of Qazi", "founder of Los Angeles Dogers" in v3's HotpotQA rows).
PATTERN_WORDS = ("founder",)


def drop_dangling(query: str, valid: set[int]) -> str:
    return REF.sub(lambda m: m.group(0) if int(m.group(1)) in valid else "", query)


def conversation_text(history: list[dict[str, str]]) -> str:
    if not history:
        return ""
    turns = "\n".join(
        f"- Q: {t['question']} A: {t.get('short_answer') or '(no answer)'}" for t in history[-3:]
    )
    return f"Earlier in this conversation:\n{turns}\n\n"


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
