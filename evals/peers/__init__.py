"""Other projects' multi-hop pipelines, run by their own code on hoptree's model and index.

One module per project: ``flashrag`` (FlashRAG's standard RAG, IRCoT, Iter-RetGen, Self-Ask),
``dspy_multihop`` (a DSPy multi-hop program), ``react`` (LangGraph's prebuilt ReAct agent with a
search tool), ``llamaindex`` (LlamaIndex's multi-step query engine). Each exports ``PEERS``;
``evals.catalogue`` lists them beside hoptree's own pipelines. The contract they share (the
metered endpoint, the recording retriever, the rows) is ``evals.peers.base``.
"""

from __future__ import annotations

from evals.peers import dspy_multihop, flashrag, llamaindex, react
from evals.peers.base import Peer, PeerMissingError

PEERS: dict[str, Peer] = {
    p.name: p for module in (flashrag, dspy_multihop, react, llamaindex) for p in module.PEERS
}

__all__ = ["PEERS", "Peer", "PeerMissingError"]
