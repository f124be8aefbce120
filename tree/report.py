"""What a stored tree looks like and what it cost: its shape (layers, nodes per layer,
compression), how well its summaries are grounded in their children, and its build stats.
``hoptree tree show``, the tree benchmark and the evals read it; building and storing trees
(``tree.build``, ``tree.store``) do not depend on it."""

from __future__ import annotations

from typing import Any

from tree.grounding import Grounding, grounding, unsupported_terms
from tree.store import Tree


def ungrounded_summaries(tree: Tree, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` summaries that name the most terms none of their children has, with
    those terms: the examples behind ``tree_report``'s grounding numbers."""
    if limit <= 0:
        return []
    text_of = {n.id: n.text for n in tree.nodes}
    found = []
    for node in tree.nodes:
        if node.layer == 0:
            continue
        missing = unsupported_terms(node.text, [text_of[c] for c in node.children])
        if missing:
            found.append(
                {"id": node.id, "layer": node.layer, "unsupported": missing, "text": node.text}
            )
    found.sort(key=lambda e: (-len(e["unsupported"]), e["layer"], e["id"]))
    return found[:limit]


def tree_report(tree: Tree) -> dict[str, Any]:
    """What ``hoptree tree show --json`` prints: shape, compression and what the tree cost.

    ``compression`` = summary tokens / tokens of their children, summed over all summary nodes;
    ``compression_mean_per_parent`` = the mean of each parent's ratio (RAPTOR reports ~0.28);
    ``mean_children`` = children per summary node (RAPTOR 6.7); ``grounding`` = how many
    summaries state a name or number none of their children has (``tree.grounding``).
    """
    summaries = [n for n in tree.nodes if n.layer > 0]
    tokens_of = {n.id: n.tokens for n in tree.nodes}
    text_of = {n.id: n.text for n in tree.nodes}

    by_layer = {  # each summary checked once; the tree's grounding is the sum of its layers'
        layer: grounding([(n.text, [text_of[c] for c in n.children]) for n in tree.layer(layer)])
        for layer in range(1, tree.depth + 1)
    }

    child_tokens = sum(tokens_of[c] for n in summaries for c in n.children)
    summary_tokens = sum(n.tokens for n in summaries)
    per_layer = []
    for layer in range(1, tree.depth + 1):
        nodes = tree.layer(layer)
        kids = sum(tokens_of[c] for n in nodes for c in n.children)
        per_layer.append(
            {
                "layer": layer,
                "nodes": len(nodes),
                "mean_children": round(sum(len(n.children) for n in nodes) / len(nodes), 3),
                "compression": round(sum(n.tokens for n in nodes) / kids, 4) if kids else None,
                "share_with_unsupported_terms": by_layer[layer].as_dict()[
                    "share_with_unsupported_terms"
                ],
            }
        )
    usage = [n.metadata.get("usage") or {} for n in summaries]
    ratios = [
        n.tokens / kids for n in summaries if (kids := sum(tokens_of[c] for c in n.children)) > 0
    ]
    return {
        "layers": tree.layer_counts(),
        "nodes": len(tree.nodes),
        "leaves": len(tree.layer(0)),
        "summary_nodes": len(summaries),
        "mean_children": (
            round(sum(len(n.children) for n in summaries) / len(summaries), 3) if summaries else 0.0
        ),
        "compression": round(summary_tokens / child_tokens, 4) if child_tokens else None,
        # RAPTOR's statistic is per parent; the mean of those ratios weighs small clusters more
        "compression_mean_per_parent": round(sum(ratios) / len(ratios), 4) if ratios else None,
        "leaf_tokens": sum(n.tokens for n in tree.nodes if n.layer == 0),
        "summary_tokens": summary_tokens,
        "fallback_summaries": sum(1 for n in summaries if n.metadata.get("fallback")),
        # names and numbers a summary states that its children do not (``tree.grounding``)
        "grounding": sum(by_layer.values(), Grounding(0, 0, 0, 0)).as_dict(),
        "per_layer": per_layer,
        "llm_calls": sum(int(u.get("calls", 0)) for u in usage),
        "prompt_tokens": sum(int(u.get("prompt_tokens", 0)) for u in usage),
        "completion_tokens": sum(int(u.get("completion_tokens", 0)) for u in usage),
        "mode": tree.mode,
        "documents": len(tree.documents),
        "roots": len(tree.roots()),
        "clustering": tree.config.get("clustering"),
        "embedding_model": tree.embedding_model,
        "dimension": tree.dimension,
        "last_build": tree.stats.get("last_build", {}),
        "updated_at": tree.updated_at,
    }
