"""(being written)"""

from __future__ import annotations

from evals.peers.base import Peer

PEERS: list[Peer] = []
