"""Searchers by short name: the built-ins and any a separate package adds.

A searcher kind is a ``SearcherSpec``: a name, a one-line description, the retrievers it needs,
and a factory that builds it from a ``SearcherContext`` (the models and retrievers the
composition root made). Other packages register through the entry-point group
``hoptree.searchers``; each entry point names a ``SearcherSpec`` (or a function returning one).
Nothing registers itself on import: a registry is an ordinary object, built by
``default_registry()`` or by hand in tests.

A caller that runs searches inside a loop of its own (the planner) narrows every searcher
through the context: ``SearcherContext.within(loop)`` carries a ``SearchLoop``, whose limits each
factory applies to its own config, and whose call allowance the context's budget takes.

What a factory builds satisfies ``searchers.searcher.Searcher``: ``search(query, *, k,
scope=None)``, where ``scope`` is the caller's ``RunScope`` (the planner's question) and the
search runs in ``context.budget.scope(scope)``, a sub-scope bounded by both. Searchers written
before scopes (``search(query, *, k)``) are still accepted; the planner counts the calls they
report after each search (``searchers.searcher.takes_scope``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from searchers.searcher import SearchBudget, Searcher, SearchLoop

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "hoptree.searchers"


@dataclass
class SearcherContext:
    """Everything a factory may use; built once per agent by the composition root."""

    chat: BaseChatModel
    embeddings: Embeddings | None = None
    retrievers: Mapping[str, Any] = field(default_factory=dict)  # "sparse", "dense", "tree", ...
    budget: SearchBudget = field(default_factory=SearchBudget)  # each search's own limits
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # per searcher name
    # None: each searcher runs its own configured loop (``hoptree search``, the evals' single
    # searchers); set by ``within``: the caller's narrower loop (the planner's searches)
    loop: SearchLoop | None = None

    def options_for(self, name: str) -> Mapping[str, Any]:
        return self.options.get(name, {})

    def within(self, loop: SearchLoop) -> SearcherContext:
        """This context for searches that run inside ``loop``: the one channel through which a
        caller narrows every searcher, built-in or plugin. The budget's call allowance becomes
        the loop's (every searcher is held to it); each factory reads ``loop`` to narrow its
        own config (the options stay each searcher's own)."""
        return replace(
            self, loop=loop, budget=replace(self.budget, max_llm_calls=loop.max_llm_calls)
        )


SearcherFactory = Callable[[SearcherContext], Searcher]


@dataclass(frozen=True)
class SearcherSpec:
    name: str
    description: str
    factory: SearcherFactory
    requires: tuple[str, ...] = ()  # names of retrievers the context must hold


class SearcherRegistryError(LookupError):
    pass


class SearcherRegistry:
    def __init__(self, specs: list[SearcherSpec] | None = None) -> None:
        self._specs: dict[str, SearcherSpec] = {}
        for spec in specs or []:
            self.register(spec)

    def register(self, spec: SearcherSpec, *, replace: bool = False) -> None:
        if not spec.name.isidentifier():
            raise SearcherRegistryError(f"searcher name {spec.name!r} must be an identifier")
        if spec.name in self._specs and not replace:
            raise SearcherRegistryError(f"a searcher named {spec.name!r} is already registered")
        self._specs[spec.name] = spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def specs(self) -> list[SearcherSpec]:
        return [self._specs[n] for n in self.names()]

    def get(self, name: str) -> SearcherSpec:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise SearcherRegistryError(f"no searcher named {name!r}; known: {known}") from None

    def create(self, name: str, context: SearcherContext) -> Searcher:
        spec = self.get(name)
        missing = [r for r in spec.requires if r not in context.retrievers]
        if missing:
            raise SearcherRegistryError(
                f"searcher {name!r} needs the {', '.join(missing)} index, which this index "
                f"directory does not have (it has: {', '.join(context.retrievers) or 'none'})"
            )
        searcher = spec.factory(context)
        if not isinstance(searcher, Searcher):
            raise SearcherRegistryError(f"the {name!r} factory returned {searcher!r}, no Searcher")
        return searcher

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Register what installed packages offer; a broken plugin is logged and skipped."""
        loaded: list[str] = []
        for point in entry_points(group=group):
            try:
                target = point.load()
                spec = (
                    target()
                    if callable(target) and not isinstance(target, SearcherSpec)
                    else target
                )
                if not isinstance(spec, SearcherSpec):
                    raise TypeError(f"{point.value} is not a SearcherSpec")
                self.register(spec)
                loaded.append(spec.name)
            except Exception as exc:  # one broken plugin must not take the others down
                log.warning("skipping searcher plugin %s (%s): %s", point.name, point.value, exc)
        return loaded


def _sparse(context: SearcherContext) -> Searcher:
    from searchers.lucene import render_query_string, render_tantivy
    from searchers.sparse_searcher import SparseSearcher, SparseSearcherConfig
    from searchers.sparse_tantivy import TantivySparseIndex

    retriever = context.retrievers["sparse"]
    render = render_tantivy if isinstance(retriever, TantivySparseIndex) else render_query_string
    config = SparseSearcherConfig(**context.options_for("sparse"))
    if context.loop is not None:
        config = config.within(context.loop)
    return SparseSearcher(
        context.chat, retriever, config=config, budget=context.budget, render=render
    )


def _dense(context: SearcherContext) -> Searcher:
    from searchers.dense_searcher import DenseSearcher, DenseSearcherConfig

    if context.embeddings is None:
        raise SearcherRegistryError("the dense searcher needs an embedding model")
    config = DenseSearcherConfig(**context.options_for("dense"))
    if context.loop is not None:
        config = config.within(context.loop)
    return DenseSearcher(
        context.chat,
        context.embeddings,
        context.retrievers["dense"],
        config=config,
        budget=context.budget,
    )


def _web(context: SearcherContext) -> Searcher:
    from searchers.web_search import web_searcher_from_options

    return web_searcher_from_options(context.options_for("web"), budget=context.budget)


BUILTIN_SEARCHERS = [
    SearcherSpec(
        "sparse",
        "rewrites the query into Lucene keywords and refines it (extend/emphasize/filter)",
        _sparse,
        requires=("sparse",),
    ),
    SearcherSpec(
        "dense",
        "writes a hypothetical answer passage (HyDE) and searches by meaning, with feedback",
        _dense,
        requires=("dense",),
    ),
    SearcherSpec(
        "web",
        "sends the query as is to web search APIs and returns their snippets with URLs",
        _web,
    ),
]
# The RAPTOR tree searcher is not here: it lives in ``tree`` (a floor above this package) and
# registers through the ``hoptree.searchers`` entry point (pyproject.toml), as a third-party
# plugin does, so the plugin path is exercised by a searcher every install has.


def default_registry(*, plugins: bool = True) -> SearcherRegistry:
    registry = SearcherRegistry(list(BUILTIN_SEARCHERS))
    if plugins:
        registry.load_entry_points()
    return registry
