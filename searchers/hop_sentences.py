"""Sentence first, span second: the sentences of a hop's passages nearest the hop, shown to the
reader alone under their passages' titles.

Why (``benchmarks/hop_reading.py``, MuSiQue tuning hops, one call an item): the embedded 1.5B
model misreads a hop mostly by taking another name of the paragraphs it is shown, the
neighbouring paragraph's or another relation's of the right one. Shown only the two sentences of
the three passages whose embeddings are nearest the hop (each under its paragraph's title, which
names the subject a sentence's "he" or "it" stands for), it read 48.9% of 90 clean hops right
against 43.3% for the same reader over the three windowed passages (12 hops won, 7 lost), in 3.4
s a read against 5.8; the two sentences hold the hop's answer for 72 of the 90. On the hops as
the planner phrased them it read as many right as the windows (30.6%, 4 won, 4 lost), still at
about 60% of the seconds.

The planner reads this way with ``PlannerSettings.findings_call="sentences"`` when its index
has embeddings (the choice costs no model call: one embedding batch of the shown passages'
sentences). Not the default: end to end inside draft-first it gained on the MuSiQue tuning
questions (+6.7 F1 on 1-30, +7.1 on the 27 of 3-4 hops, a fifth fewer prompt tokens) and lost
on 2Wiki's (-7.5 on 1-20, 3 won, 5 lost), where a hop's relation ("date of death", "place of
birth", "spouse") sits in its subject's paragraph, which the windows read whole around the
relation's words, while the nearest sentences came from a neighbour or missed it
(``evals/results/v8/tune/*/sentences-ab.md``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from searchers.passages import Hit, Passage
from searchers.text import split_sentences

FINDINGS_SENTENCES = 2  # measured best of 1, 2 and 3 (44.4%, 48.9%, 47.8% on 90 tuning hops)
FINDINGS_LEAD = True  # with the lead sentence: 51.1% (2 hops won, none lost, on the same 90)


async def nearest_sentences(
    query: str,
    hits: Sequence[Hit],
    embeddings: Embeddings,
    k: int = FINDINGS_SENTENCES,
    *,
    lead: bool = False,
) -> list[Hit]:
    """The ``k`` sentences of ``hits`` (their whole texts) nearest ``query`` by cosine of their
    embeddings, nearest first, each a hit of its own under its passage's id, title and
    metadata (so a span read from it is checked, and cited, against that passage). ``lead``:
    the first sentence of the nearest sentence's passage is shown too (last) when it is not
    among them: an encyclopedic paragraph states its subject's dates and identity there, which
    a query's relation words ("date of death") rarely pull up. Hits with no sentence to split
    are returned as they are."""
    pieces = [(hit, n, s) for hit in hits for n, s in enumerate(split_sentences(hit.passage.text))]
    if not pieces or k <= 0:
        return list(hits)
    vectors = np.asarray(await embeddings.aembed_documents([s for _h, _n, s in pieces]))
    target = np.asarray(await embeddings.aembed_query(query))
    norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(target) or 1.0)
    scores = vectors @ target / np.where(norms == 0, 1.0, norms)
    order = sorted(range(len(pieces)), key=lambda i: (-float(scores[i]), i))[:k]
    if lead:
        top = pieces[order[0]][0]
        first = next(i for i, (hit, n, _s) in enumerate(pieces) if hit is top and n == 0)
        order += [first] if first not in order else []
    chosen: list[Hit] = []
    for i in order:
        hit, _n, sentence = pieces[i]
        p = hit.passage
        chosen.append(Hit(Passage(p.id, p.title, sentence, p.metadata), float(scores[i]),
                          hit.retriever))  # fmt: skip
    return chosen
