"""What every evaluation run shares, whatever its questions' format (``evals.runner`` runs
question files, ``evals.quality.runner`` QuALITY files): the options it is asked with
(``RunConfig``), its directory (``run.json`` says what it measures, ``details.jsonl`` gets one
flushed line per finished question, so a killed run resumes), how results name their dataset,
and the fields that end every details row.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agent.settings import BudgetSettings, PlannerSettings, Settings
from evals.provenance import code_version
from evals.report import DETAILS_FILE, ReportError, parse_details
from searchers.index_dir import now_iso

log = logging.getLogger(__name__)

SETTINGS: tuple[str, ...] = ("open", "distractor")
RUN_FILE = "run.json"
MAX_CONCURRENCY = 64
# What a run directory measures; a rerun must agree on all of these.
# ``planner``: the non-default planner and budget settings of a planner run (absent when none)
IDENTITY_KEYS = (
    "dataset_sha256", "setting", "pipeline", "k", "passage_chars", "model", "planner"
)  # fmt: skip
# Keys a run records since a later version: compared when the recorded run has them, so a run
# made before them still resumes. ``planner_settings``: every planner and budget value of a
# planner run, defaults included (a changed default is another measurement too);
# ``pipeline_planner``: the planner settings the pipeline itself sets over those (``draft-first``
# reading each hop free), which the configured values do not show.
LATER_KEYS = ("planner_settings", "pipeline_planner")


REPOSITORY = Path(__file__).resolve().parents[1]


def dataset_label(dataset: Path) -> str:
    """How results name their dataset: relative to the repository when it lies in it or
    beside it (``../shared/data/...``), else its file name; never an absolute path, which
    would say whose machine made the results and mean nothing on another one. The file's
    sha256, recorded beside it, is what identifies the data."""
    # as written first: a ``../shared`` that is a symlink resolves to somewhere else entirely
    for path in (Path(os.path.normpath(dataset.absolute())), dataset.resolve()):
        for base, prefix in ((REPOSITORY, ""), (REPOSITORY.parent, "../")):
            if path.is_relative_to(base):
                return prefix + path.relative_to(base).as_posix()
    return dataset.resolve().name


def _difference(key: str, there: Any, now: Any) -> str:
    """One disagreeing identity key, said briefly: a settings map names only the entries that
    differ."""
    if isinstance(there, dict) and isinstance(now, dict):
        changed = sorted(k for k in {*there, *now} if there.get(k) != now.get(k))
        there = {k: there.get(k) for k in changed}
        now = {k: now.get(k) for k in changed}
    return f"{key}: {there!r} there, {now!r} now"


# what each planner pipeline sets itself; the rest of PlannerSettings comes from the settings
PIPELINE_PLANNER_FIELDS = frozenset(
    {"searchers", "decompose", "summarize", "supplement", "draft", "findings_call"}
)


# Planner settings removed (issue 64) at the one value whose behaviour the code keeps: still
# recorded so, so a run recorded before their removal resumes as the same measurement.
RETIRED_PLANNER_VALUES: dict[str, Any] = {
    "planner.unfold": False,
    "planner.question_hits_first": 0,
    "planner.router_weak": False,
    "planner.narrow_resolved": True,
    "planner.chain_answer": True,
    "planner.nameless_open": True,
    "planner.open_plan_answer": "one_call",
    "planner.relation_plans": True,
    "planner.residual_hop": True,
    "planner.question_search": True,
}

# a section of PlannerSettings recorded under the flat names it had before it was one (issue
# 64), so a run recorded then resumes as the same measurement: ``search.max_depth`` is
# ``search_max_depth``, the router's ``policy`` is ``router``
_SECTION_KEYS = {("router", "policy"): "router"}


def _flat(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {key: value}
    return {_SECTION_KEYS.get((key, sub), f"{key}_{sub}"): inner for sub, inner in value.items()}


def _planner_values(planner: PlannerSettings, budgets: BudgetSettings) -> dict[str, Any]:
    values = {
        f"{name}.{flat}": inner
        for name, current in (("planner", planner), ("budgets", budgets))
        for key, value in current.model_dump(mode="json").items()
        if key not in PIPELINE_PLANNER_FIELDS
        for flat, inner in _flat(key, value).items()
    }
    return {**values, **RETIRED_PLANNER_VALUES}


def planner_values(settings: Settings) -> dict[str, Any]:
    """Every planner and budget setting a planner run answers with ("planner.answer_sources":
    5, ...), defaults included, which ``run.json`` also records: a default changed in the code
    (``open_plan_answer`` became "one_call") makes rows of another answer step that
    ``planner_overrides`` alone cannot tell apart."""
    return _planner_values(settings.planner, settings.budgets)


def pipeline_planner(switches: Mapping[str, Any]) -> dict[str, Any]:
    """A pipeline's own planner settings as ``run.json`` records them ("planner.findings_call":
    "free", ...; tuples as lists, as JSON reads them back), so a resumed run compares equal."""
    return {
        f"planner.{k}": list(v) if isinstance(v, tuple) else v for k, v in sorted(switches.items())
    }


def planner_overrides(settings: Settings) -> dict[str, Any]:
    """The planner and budget settings that differ from their defaults ("planner.answer_sources":
    8), which a planner run records in ``run.json``: rows made with other settings are another
    measurement, and resuming a run must not mix them."""
    default = _planner_values(type(settings.planner)(), type(settings.budgets)())
    return {k: v for k, v in planner_values(settings).items() if v != default[k]}


class EvalRunError(ValueError):
    """A run that cannot start as asked (bad options, a directory holding another run)."""


@dataclass
class RunConfig:
    dataset: Path
    pipeline: str
    out: Path
    fmt: str = "auto"
    setting: str = "open"
    limit: int | None = None
    offset: int = 0  # skip the file's first N questions (a held-out slice: --offset 50 --limit 50)
    types: tuple[str, ...] = ()  # only these question types of that slice (--type inference)
    concurrency: int = 1
    index: Path | None = None  # open setting: use this index instead of building one
    progress: bool | None = None  # None: a bar on a terminal, else one line per question
    tree_options: tuple[str, ...] = ()  # QuALITY tree pipelines: KEY=VALUE tree settings
    # a label written into every row this invocation writes: the chunk of an interleaved
    # comparison (benchmarks/peers.py), so rows made beside each other say so exactly
    batch: str | None = None

    def check(self) -> None:
        if self.setting not in SETTINGS:
            raise EvalRunError(
                f"unknown setting {self.setting!r}; expected one of {', '.join(SETTINGS)}"
            )
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise EvalRunError(f"concurrency must be 1..{MAX_CONCURRENCY}, got {self.concurrency}")
        if self.limit is not None and self.limit < 0:
            raise EvalRunError(f"limit must be >= 0, got {self.limit}")
        if self.offset < 0:
            raise EvalRunError(f"offset must be >= 0, got {self.offset}")
        if self.index is not None and self.setting != "open":
            raise EvalRunError("--index applies to the open setting only")
        if self.index is not None and not (Path(self.index) / "manifest.json").is_file():
            raise EvalRunError(f"{self.index}: not an index directory (no manifest.json)")


# --------------------------------------------------------------------------- the run directory


class RunDirectory:
    """``run.json`` (what is measured) and ``details.jsonl`` (what is finished)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.details_path = self.path / DETAILS_FILE
        self.run_path = self.path / RUN_FILE

    def claim(
        self, identity: dict[str, Any], keys: Sequence[str] = IDENTITY_KEYS
    ) -> dict[str, Any]:
        """Create the directory for this run, or check that it already holds this run (the
        ``keys`` of ``identity`` are what must agree)."""
        if self.path.exists() and not self.path.is_dir():
            raise EvalRunError(f"{self.path}: exists and is not a directory")
        self.path.mkdir(parents=True, exist_ok=True)
        recorded = self.recorded()
        if recorded is not None:
            self.check_same(recorded, identity, keys)
            return recorded
        if self.details_path.is_file() and self.details_path.stat().st_size:
            raise EvalRunError(
                f"{self.path} has {DETAILS_FILE} but no {RUN_FILE}: it cannot be told which run "
                "the rows belong to; choose a new --out directory"
            )
        record = {**identity, "created": now_iso()}
        tmp = self.run_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.run_path)
        return record

    def recorded(self) -> dict[str, Any] | None:
        """What ``run.json`` says the directory measures, or None when nothing ran there."""
        if not self.run_path.is_file():
            return None
        try:
            return json.loads(self.run_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise EvalRunError(f"{self.run_path}: unreadable ({exc})") from exc

    def check_same(
        self, recorded: dict[str, Any], identity: dict[str, Any], keys: Sequence[str]
    ) -> None:
        """Refuse ``identity`` when it disagrees with the recorded run on one of ``keys`` (or on
        a later key both have)."""
        later = [k for k in LATER_KEYS if k in recorded and k in identity]
        differs = [k for k in (*keys, *later) if recorded.get(k) != identity.get(k)]
        if differs:
            details = "; ".join(_difference(k, recorded.get(k), identity.get(k)) for k in differs)
            raise EvalRunError(
                f"{self.path} holds another run ({details}); resume it with the same "
                "options, or choose a new --out directory"
            )

    def finished(self) -> dict[str, dict[str, Any]]:
        """Rows by question id. A torn last line (a kill mid-write) is cut from the file, so its
        question runs again and the next row starts on a line of its own."""
        if not self.details_path.is_file():
            return {}
        raw = self.details_path.read_bytes()
        try:
            rows, torn = parse_details(raw, self.details_path)
        except ReportError as exc:
            raise EvalRunError(str(exc)) from exc
        if torn:
            log.warning(
                "%s: dropping an unfinished last line (%d bytes) left by an interrupted run",
                self.details_path,
                torn,
            )
            with self.details_path.open("r+b") as fh:
                fh.truncate(len(raw) - torn)
        return rows

    def open_for_append(self) -> IO[str]:
        return self.details_path.open("a", encoding="utf-8")


def append_row(handle: IO[str], row: dict[str, Any]) -> None:
    """One whole line, then flush: a killed process loses at most the line being written."""
    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    handle.flush()


def run_fields(output: Any) -> dict[str, Any]:
    """The end of every details row, whatever the dataset: what the question cost, what went
    wrong, the planner's record if a planner ran, and which code made the row."""
    planner = {"planner": output.planner} if output.planner is not None else {}
    if getattr(output, "peer", None) is not None:
        planner["peer"] = output.peer
    # the server's clock, when it kept one (llama.cpp does; OpenAI does not)
    server = {
        "cached_prompt_tokens": getattr(output, "cached_prompt_tokens", 0),
        "prompt_ms": round(getattr(output, "prompt_ms", 0.0), 1),
        "decode_ms": round(getattr(output, "decode_ms", 0.0), 1),
    }
    server = {k: v for k, v in server.items() if v}
    steps = getattr(output, "steps", None)
    return {
        "llm_calls": output.llm_calls,
        "prompt_tokens": output.prompt_tokens,
        "completion_tokens": output.completion_tokens,
        "llm_cache_hits": output.llm_cache_hits,
        "cache_hit_prompt_tokens": output.cache_hit_prompt_tokens,
        "seconds": round(output.seconds, 3),
        **server,
        **({"steps": steps} if steps else {}),
        "error": output.error,
        "warnings": output.warnings,
        **planner,
        "code": code_version(),
        "finished_at": now_iso(),
    }
