"""Every pipeline ``hoptree eval run --pipeline`` accepts: hoptree's own (``evals.pipelines``)
and the peers (``evals.peers``), in one dict, looked up in one place.

The peers sit in their own room because they run other projects' code; listing them here (not
in ``evals.pipelines``) keeps that room above the pipeline contract it builds on.
"""

from __future__ import annotations

from evals.peers import PEERS
from evals.pipelines import HOPTREE_PIPELINES, PipelineError, PipelineSpec

PIPELINES: dict[str, PipelineSpec] = {
    **HOPTREE_PIPELINES,
    **{name: p.spec for name, p in PEERS.items()},
}


def get_pipeline(name: str) -> PipelineSpec:
    """The pipeline called ``name``; a peer that is not installed raises ``PeerMissingError``
    (a ``PipelineError``) naming its install step, before any model starts."""
    try:
        spec = PIPELINES[name]
    except KeyError:
        raise PipelineError(f"unknown pipeline {name!r}; known: {', '.join(PIPELINES)}") from None
    if name in PEERS:
        PEERS[name].install.check(name)
    return spec
