"""Building low-level searchers over an index directory: the composition the `search` command,
the planner and the evals share, so each searcher is wired the same way everywhere."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from agent.indexing import canonical_model_name, es_enabled, es_retrievers
from agent.runtime.runtime import Runtime
from agent.settings import DEFAULT_PLANNER_SEARCHERS, Settings
from searchers.index_dir import IndexDir
from searchers.registry import SearcherContext, SearcherRegistry, default_registry
from searchers.searcher import Searcher
from searchers.verification import VerificationRule

TREE_SUBDIR = "tree"  # where `hoptree tree build` puts an index's RAPTOR tree


def index_has_tree(index_dir: Path) -> bool:
    """Whether ``index_dir`` holds a committed tree (a ``CURRENT`` naming a version), not just
    the directory a killed first build left behind."""
    from tree.store import tree_exists

    return tree_exists(Path(index_dir) / TREE_SUBDIR)


def planner_searchers(settings: Settings, index_dir: Path) -> list[str]:
    """The searchers the planner fans out to over ``index_dir``: the ones the settings name
    when the user set them (an explicit list always wins, even one without the tree);
    otherwise sparse and dense, plus the tree searcher when the index has a tree, so
    `hoptree tree build` is all it takes for `hoptree ask` to read the tree's summaries."""
    chosen = settings.planner.searchers
    if chosen:
        return list(chosen)
    names = list(DEFAULT_PLANNER_SEARCHERS)
    if index_has_tree(index_dir):
        names.append("tree")
    return names


def searcher_context(
    runtime: Runtime, index_dir: Path, needs: Collection[str] = ("sparse", "dense")
) -> SearcherContext:
    """Open the retrievers named in ``needs`` (loading the embedding model only for dense);
    the dense one only after its embedding model has been checked against the configured
    one, so a mismatch is a clear error before anything is embedded."""
    index = IndexDir.open(index_dir)
    retrievers: dict[str, Any] = {}
    if es_enabled(runtime.settings):
        model = canonical_model_name(runtime.settings.embeddings.model)
        cluster = es_retrievers(runtime.settings, runtime.embeddings, model)
        retrievers = {name: cluster[name] for name in ("sparse", "dense") if name in needs}
    elif "sparse" in needs:
        retrievers["sparse"] = index.sparse()
    if "dense" in needs and "dense" not in retrievers:
        model = canonical_model_name(runtime.settings.embeddings.model)
        retrievers["dense"] = index.dense(runtime.embeddings, model)
    if "tree" in needs and (index_dir / TREE_SUBDIR).exists():
        from tree.retrieval import TreeRetriever

        retrievers["tree"] = TreeRetriever.open(index_dir / TREE_SUBDIR, runtime.embeddings)
    return SearcherContext(
        chat=runtime.chat.model,
        embeddings=runtime.embeddings,
        retrievers=retrievers,
        budget=runtime.settings.search_budget(),
        options=searcher_options(runtime.settings),
    )


def searcher_options(settings: Settings) -> dict[str, dict[str, Any]]:
    """Every searcher's options in one step: its ``[searchers.<name>]`` table (plugins'
    included, as written), the shared stop rule for the built-ins that take one, and ``[web]``
    for the web searcher."""
    cfg = settings.searchers
    rule = VerificationRule(kind=cfg.verify_rule, min_coverage=cfg.verify_min_coverage)
    options = cfg.tables()
    for name in ("sparse", "dense"):
        options[name]["rule"] = rule
    options["web"] = {**settings.web.options(), **options.get("web", {})}
    return options


def create_searcher(
    runtime: Runtime,
    index_dir: Path,
    name: str,
    registry: SearcherRegistry | None = None,
) -> Searcher:
    registry = registry or default_registry()
    spec = registry.get(name)  # an unknown name fails before any model is started
    return registry.create(name, searcher_context(runtime, index_dir, spec.requires))
