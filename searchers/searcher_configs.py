"""The searchers' settings (``[searchers]``, ``SearcherSettings``): each built-in searcher's
one config class, a plugin's table, and the stop rule they share.

``SparseSearcherConfig`` and ``DenseSearcherConfig`` are the one home of their searcher's loop:
the settings' ``[searchers.sparse]`` and ``[searchers.dense]`` tables are these classes
(``agent.settings``), the registry's factories build them from those tables, and a search
inside a plan runs one narrowed to the caller's ``SearchLoop`` (``within``). They live in this
module rather than in ``sparse_searcher.py`` and ``dense_searcher.py`` (which import them from
here) because reading the settings must stay light: those modules load LangGraph, numpy and the
chat client, and every ``hoptree`` command, ``--help`` included, reads the settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from searchers.searcher import SearchLoop

RuleKind = Literal["llm", "coverage", "llm_and_coverage", "extract", "extract_and_coverage"]


@dataclass(frozen=True)
class VerificationRule:
    """How the LLM's verdict and term coverage combine into "sufficient". The default (coverage
    alone, 0.6 of the query's key terms) was chosen by measurement: ``evals/verification_study.py``,
    results in ``evals/results/verification.md``; the settings' ``[searchers] verify_rule`` and
    ``verify_min_coverage`` default to it."""

    kind: RuleKind = "coverage"
    min_coverage: float = 0.6

    @property
    def needs_llm(self) -> bool:
        return self.kind != "coverage"

    @property
    def extracts(self) -> bool:
        return self.kind in ("extract", "extract_and_coverage")

    def gate(self, cov: float) -> bool:
        """May the LLM be asked at all? Below the coverage bar, the answer is already no."""
        return self.kind in ("llm", "extract") or cov >= self.min_coverage

    def decide(self, cov: float, llm_says: bool | None) -> bool:
        if self.kind == "coverage":
            return cov >= self.min_coverage
        if self.kind in ("llm", "extract"):
            return bool(llm_says)
        return cov >= self.min_coverage and bool(llm_says)


class SparseSearcherConfig(BaseModel):
    """The sparse searcher's loop and what it shows the model: the one home of these settings.
    The settings' ``[searchers.sparse]`` table is this class (``agent.settings``), the
    registry's factory builds it from that table, and a search inside a plan runs it narrowed
    to the planner's loop (``within``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_depth: int = Field(
        3, ge=0, le=6, description="feedback levels below the rewritten query (LevelRAG: 3)"
    )
    max_refinements: int = Field(
        27, ge=0, le=500, description="feedback queries tried at most (LevelRAG: 27)"
    )
    # LevelRAG always rewrites; on HotpotQA the raw question beat the 1.5B model's rewrite
    # (recall@10 0.875 vs 0.855), and a query that already verifies needs no LLM call at all.
    original_first: bool = Field(
        True, description="probe the query as written before the LLM rewrite (LevelRAG: no)"
    )
    k: int = Field(10, ge=1, description="hits returned; a search's own k wins")
    verify_top: int = Field(5, ge=1, description="hits the stop rule reads")
    feedback_top: int = Field(3, ge=1, description="hits the feedback prompt shows")
    passage_chars: int = Field(300, ge=1, description="characters per hit shown to the model")
    # the searchers' shared stop rule, set from ``[searchers] verify_rule`` (not a table key)
    rule: VerificationRule = Field(default_factory=VerificationRule, exclude=True)

    def within(self, loop: SearchLoop) -> SparseSearcherConfig:
        """This loop narrowed to ``loop`` (a search inside a plan): its feedback levels and
        refinements; whether the query as written is probed first stays this config's."""
        return self.model_copy(
            update={"max_depth": loop.max_depth, "max_refinements": loop.max_refinements}
        )


class DenseSearcherConfig(BaseModel):
    """The dense (HyDE) searcher's loop and what it shows the model: the one home of these
    settings. The settings' ``[searchers.dense]`` table is this class (``agent.settings``), the
    registry's factory builds it from that table, and a search inside a plan runs it narrowed
    to the planner's loop (``within``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rewrites: int = Field(
        3, ge=0, le=20, description="pseudo-documents written at most (0: the query alone)"
    )
    # HyDE is for queries whose words miss the passage; an atomic query that already verifies
    # needs no LLM call (``within`` turns this on: most of the planner's atomic queries pass
    # the coverage check as written).
    original_first: bool = Field(
        False, description="probe the query alone before writing any pseudo-document"
    )
    k: int = Field(10, ge=1, description="hits returned; a search's own k wins")
    verify_top: int = Field(5, ge=1, description="hits the stop rule reads")
    feedback_top: int = Field(3, ge=1, description="hits the next pseudo-document's prompt shows")
    passage_chars: int = Field(300, ge=1, description="characters per hit shown to the model")
    # The prompt asks for three to five sentences, about 150 tokens. A reply past 256 is the
    # model repeating itself; cut there, it is salvaged and de-duplicated, instead of running on
    # to the model's own limit (512 here), where the client would throw all of it away.
    pseudo_max_tokens: int = Field(256, ge=1, description="tokens a pseudo-document may take")
    # the searchers' shared stop rule, set from ``[searchers] verify_rule`` (not a table key)
    rule: VerificationRule = Field(default_factory=VerificationRule, exclude=True)

    def within(self, loop: SearchLoop) -> DenseSearcherConfig:
        """This loop narrowed to ``loop`` (a search inside a plan): its pseudo-documents, and
        the query alone probed first, so a query that verifies as written costs no call."""
        return self.model_copy(update={"max_rewrites": loop.max_rewrites, "original_first": True})


# the searchers' stop rule as chosen by measurement (searchers/verification.py)
DEFAULT_RULE = VerificationRule()

# the flat names of earlier releases, still read: (old key) -> (searcher, option)
_FLAT_SEARCHER_KEYS = {
    "sparse_max_depth": ("sparse", "max_depth"),
    "sparse_max_refinements": ("sparse", "max_refinements"),
    "sparse_original_first": ("sparse", "original_first"),
    "dense_max_rewrites": ("dense", "max_rewrites"),
}


class SearcherSettings(BaseModel):
    """The low-level searchers: one table of options per searcher name, ``[searchers.sparse]``,
    ``[searchers.dense]`` and ``[searchers.<name>]`` for any registered plugin (handed to its
    factory as it is, ``SearcherContext.options_for(name)``), plus the stop rule the built-ins
    share (see searchers/verification.py). The web searcher's providers and keys are ``[web]``.
    These are each searcher's stand-alone loop (``hoptree search``); inside a plan the planner
    narrows every searcher to its own lighter loop (``PlannerSettings.search_loop``).
    """

    model_config = {"extra": "allow"}  # a plugin's table; checked to be a table below

    verify_rule: RuleKind = Field(DEFAULT_RULE.kind, description="when a retrieval suffices")
    verify_min_coverage: float = Field(DEFAULT_RULE.min_coverage, ge=0.0, le=1.0)
    # each built-in's table is its searcher's own config class, the one home of its loop
    sparse: SparseSearcherConfig = Field(default_factory=SparseSearcherConfig)
    dense: DenseSearcherConfig = Field(default_factory=DenseSearcherConfig)

    @model_validator(mode="before")
    @classmethod
    def _flat_keys(cls, data: Any) -> Any:
        """``sparse_max_depth`` (and ``HOPTREE_SEARCHERS__SPARSE_MAX_DEPTH``) of earlier
        releases mean ``[searchers.sparse] max_depth``; a value set both ways keeps the table's."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for flat, (name, option) in _FLAT_SEARCHER_KEYS.items():
            if flat in data:
                value = data.pop(flat)
                table = data.get(name)
                table = dict(table) if isinstance(table, dict) else {}
                table.setdefault(option, value)
                data[name] = table
        return data

    @model_validator(mode="after")
    def _plugin_tables(self) -> SearcherSettings:
        for name, value in (self.model_extra or {}).items():
            if not isinstance(value, dict):
                raise ValueError(
                    f"searchers.{name} must be a table of options for the searcher named "
                    f"{name!r} ([searchers.{name}] in TOML, HOPTREE_SEARCHERS__{name.upper()}__"
                    "<OPTION> in the environment), not a single value"
                )
        return self

    def tables(self) -> dict[str, dict[str, Any]]:
        """Every searcher's own options by name, the built-ins' and the plugins'."""
        return {
            "sparse": self.sparse.model_dump(),
            "dense": self.dense.model_dump(),
            **{name: dict(value) for name, value in (self.model_extra or {}).items()},
        }
