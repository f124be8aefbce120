"""Following a chain of queries to its last hop, so a short answer is not the bridge entity.

A multi-hop question is planned as a chain: "wife of John Middleton Murry" (#1), then "cause of
death of #1". The 1.5B reader often answers with the bridge although the last hop's finding is
in its notes; a bridge is, by construction, what a later query was asked about, so the answer
is moved along the chain to the later supported finding (``last_hop``, ``chain_end``). Nothing
is asked of the model; "A or B?" questions are ``agent.checks.comparison``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.rules.values import parse_date
from searchers.text import normalize_answer_folded

MAX_HOPS = 6  # a plan has at most a handful of queries; the bound only guards odd states


@dataclass(frozen=True)
class Hop:
    """One planned query as the chain sees it."""

    id: str
    needs: tuple[str, ...]  # ids of the earlier queries whose answers it was sent with
    replaces: str | None  # the open query a follow-up asked again
    answer: str | None  # its supported finding, None if it has none
    superseded: bool = False  # a follow-up's supported finding replaced it


def same_answer(short: str, answer: str) -> bool:
    """The short answer is this finding: equal, or one contains the other (the reader copies
    "Gian Galeazzo Visconti, the first Duke of Milan" for the finding "Gian Galeazzo Visconti")."""
    a, b = normalize_answer_folded(short), normalize_answer_folded(answer)
    return bool(a and b) and (a == b or f" {b} " in f" {a} " or f" {a} " in f" {b} ")


def _standing(hop: Hop, hops: Sequence[Hop]) -> Hop | None:
    """The hop whose finding counts for ``hop``: itself if supported and not replaced, else
    the supported follow-up that asked it again."""
    if hop.answer and not hop.superseded:
        return hop
    follow_ups = [h for h in hops if h.replaces == hop.id and h.answer and not h.superseded]
    return follow_ups[0] if len(follow_ups) == 1 else None


def last_hop(short: str, hops: Sequence[Hop], *, asks_when: bool = False) -> str | None:
    """The answer at the end of the chain the short answer sits in the middle of; None when
    the short answer is no bridge, the chain forks, its next hop found nothing, or the last hop
    is a date and the question does not ask when (``Question.asks_when``: a plan that checks
    "start date of #1" for "What league ... started in 2013?" asks for the league)."""
    start = [h for h in hops if h.answer and not h.superseded and same_answer(short, h.answer)]
    if len(start) != 1:
        return None
    current = start[0]
    moved = False
    for _ in range(MAX_HOPS):
        needing = [h for h in hops if current.id in h.needs]
        if len(needing) != 1:
            break
        following = _standing(needing[0], hops)
        if following is None or following.answer is None:
            break
        current, moved = following, True
    if not moved or current.answer is None:
        return None
    if parse_date(current.answer) is not None and not asks_when:
        return None
    return current.answer


def _ancestors(hop: Hop, by_id: dict[str, Hop]) -> set[str]:
    seen: set[str] = set()
    todo = list(hop.needs)
    for _ in range(MAX_HOPS * MAX_HOPS):  # bounded walk: plans are tiny, cycles impossible
        if not todo:
            break
        current = todo.pop()
        if current in seen or current not in by_id:
            continue
        seen.add(current)
        todo.extend(by_id[current].needs)
    return seen


def _one_chain(hops: Sequence[Hop]) -> tuple[Hop, list[Hop]] | None:
    """(end, links) when the planned queries form one chain: a single query (the end) builds,
    through ``#n``, on every other query that builds on or feeds another; None otherwise (no
    chain, two ends, or a second chain beside this one). Follow-ups that replace a query are
    not links; they stand in for the query they replace (``_standing``)."""
    planned = [h for h in hops if h.replaces is None]
    by_id = {h.id: h for h in planned}
    ends = [h for h in planned if h.needs and not any(h.id in o.needs for o in planned)]
    if len(ends) != 1:
        return None
    end = ends[0]
    links = _ancestors(end, by_id) | {end.id}
    chained = [h for h in planned if h.needs or any(h.id in o.needs for o in planned)]
    if {h.id for h in chained} != links:
        return None
    return end, [by_id[i] for i in sorted(links, key=[h.id for h in planned].index)]


def chain_end(hops: Sequence[Hop], *, asks_when: bool = False) -> str | None:
    """The finding at the end of a resolved chain, or None.

    A plan is a chain when one planned query (the end) builds, through ``#n``, on every other
    planned query; it is resolved when each of them has a supported finding, its own or a
    follow-up's. Then the end's finding answers the question: it was asked for exactly what the
    question asks, of the entity the earlier hops found. Follow-ups that replace nothing are
    extra searches, not links.
    Queries planned beside the chain that neither build on nor feed it are not links. A date
    is not the answer to a question that does not ask when (see ``last_hop``)."""
    chain = _one_chain(hops)
    if chain is None:
        return None
    end, links = chain
    # a planned query no hop builds on and that builds on none (a fragment of the question
    # searched alone) is not a link: the chain resolves without it
    for link in links:
        standing = _standing(link, hops)
        if standing is None or not standing.answer:
            return None
    final = _standing(end, hops)
    assert final is not None and final.answer is not None  # checked in the loop above
    if parse_date(final.answer) is not None and not asks_when:
        return None
    return final.answer
