"""Paired comparisons of evaluation runs over the questions they share.

Means side by side hide how noisy a difference is: on 50 questions a 5-point F1 gap can be three
questions flipping. Runs over one dataset file answer the same questions, so each question gives
a paired difference, and the spread of those differences says how sure a gap is. This module
computes, for a run against a reference:

- the mean per-question difference of F1, EM and Acc (percentage points: a paired mean difference
  equals the difference of the two means on the shared questions);
- a paired bootstrap interval of that mean (percentile method, seeded, so a report regenerates
  byte-identical);
- wins, losses and ties on F1, which show whether a gain is many small moves or a few big ones;
- against the first run given, what each question cost: seconds (and the first answer's, for
  draft first), LLM calls and tokens, as a mean difference with the same bootstrap interval,
  the questions that cost less and more, both medians, and how many answers changed once
  normalised as the scores normalise them ("is B faster than A, and does it answer the same?").

On top of that it places runs between a floor and a ceiling: the closed-book run
(``no-retrieval``), the best one-call RAG run (``bm25``, ``dense``, ``hybrid``) and the reader
given only the gold paragraphs (``oracle``). The share of the gap from the best one-call RAG to
the oracle that an agent run closes ("headroom captured") is what the agent's extra calls buy.
An ablation of the planner is also read against the planner's own run: what its step is worth.

Everything here is a pure function of rows; rendering the tables is in this module too (they are
its only reader), the chart is ``evals.compare``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from evals.drafts import first_answer_seconds, has_drafts
from searchers.text import normalize_answer_official

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
# per-question metrics compared, in the order the tables show them; W/L/T are counted on F1
METRICS = {"f1": "F1", "em": "EM", "acc": "Acc"}

Role = Literal["oracle", "no-retrieval", "one-call", "agent"]
ORACLE = "oracle"
FLOOR = "no-retrieval"
ONE_CALL = frozenset({"bm25", "dense", "hybrid"})
# LevelRAG's ablations (its table 2) and the step each switches off; each is also read against
# the planner itself (``full``), which says what the step is worth
PLANNER = "full"
ABLATIONS = {
    "no-decompose": "decomposition",
    "no-summarize": "summaries (findings)",
    "no-supplement": "follow-up rounds",
}

# per-question costs read against the first run given, in the order the cost table shows them:
# row field -> (what the table calls it, decimals of its cells). ``first_answer_s`` is not a
# row field: ``evals.drafts.first_answer_seconds`` reads it, and it is shown only when some run
# answered draft first
COSTS = {
    "seconds": ("seconds", 1),
    "first_answer_s": ("first answer s", 1),
    "llm_calls": ("LLM calls", 2),
    "prompt_tokens": ("prompt tokens", 0),
    "completion_tokens": ("completion tokens", 0),
}
TIMES = frozenset({"seconds", "first_answer_s"})

# the bootstrap draws its index matrix in blocks of about this many cells, so a 10,000 x 7,405
# resampling (HotpotQA's whole dev set) does not ask for 600 MB at once
_BLOCK_CELLS = 2_000_000
# F1 values are recomputed from the same strings by the same code; anything closer is a tie
_TIE = 1e-12


def pipeline_role(pipeline: str) -> Role:
    """Where a run stands: the ceiling, the floor, one-call RAG, or an agent (the planner and its
    ablations, and anything new: a pipeline not known to be a baseline is the thing studied)."""
    if pipeline == ORACLE:
        return "oracle"
    if pipeline == FLOOR:
        return "no-retrieval"
    if pipeline in ONE_CALL:
        return "one-call"
    return "agent"


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class PairedDiff:
    """A run against a reference on ``n`` shared questions. ``mean``, ``low`` and ``high`` are
    percentage points (the tables' scale); ``wins`` count questions where the run scored more."""

    n: int
    mean: float
    low: float
    high: float
    wins: int
    losses: int
    ties: int

    @property
    def excludes_zero(self) -> bool:
        """The interval lies wholly on one side of zero: a difference this sample supports."""
        return self.low > 0 or self.high < 0


def bootstrap_interval(
    diffs: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``diffs``: resample the questions with
    replacement ``resamples`` times and take the middle ``confidence`` of the resampled means.

    A fresh generator per call, so the interval of a pair depends only on its differences and
    the seed, not on which other runs were compared before it."""
    values = np.asarray(diffs, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("the bootstrap needs at least one paired difference")
    if resamples < 1:
        raise ValueError("the bootstrap needs at least one resample")
    if not 0 < confidence < 1:
        raise ValueError("confidence is a fraction in (0, 1)")
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // values.size)
    means = np.empty(resamples)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        picks = rng.integers(0, values.size, size=(stop - start, values.size))
        means[start:stop] = values[picks].mean(axis=1)
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def paired_diff(
    run: Mapping[str, float],
    reference: Mapping[str, float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairedDiff:
    """``run`` minus ``reference`` on the question ids both score (per-question scores in
    [0, 1], by id). The ids are sorted first, so the resampled questions do not depend on the
    order the rows were written in."""
    ids = sorted(run.keys() & reference.keys())
    if not ids:
        raise ValueError("the two runs share no question")
    diffs = np.array([float(run[i]) - float(reference[i]) for i in ids])
    low, high = bootstrap_interval(diffs, resamples=resamples, seed=seed)
    return PairedDiff(
        n=len(ids),
        mean=100.0 * float(diffs.mean()),
        low=100.0 * low,
        high=100.0 * high,
        wins=int((diffs > _TIE).sum()),
        losses=int((diffs < -_TIE).sum()),
        ties=int((np.abs(diffs) <= _TIE).sum()),
    )


def headroom_captured(run: float, best_one_call: float, oracle: float | None) -> float | None:
    """The share (percent) of the gap from the best one-call RAG run to the oracle that ``run``
    closes; None without an oracle, or when the oracle does not beat the one-call run (there is
    no gap to close, and a ratio over zero or less would mean nothing)."""
    if oracle is None or oracle <= best_one_call:
        return None
    return 100.0 * (run - best_one_call) / (oracle - best_one_call)


def scores(rows: Mapping[str, Mapping[str, Any]], metric: str) -> dict[str, float]:
    """One per-question score by id (a row missing it has failed to score, so it counts 0)."""
    return {qid: float(row.get(metric) or 0.0) for qid, row in rows.items()}


@dataclass(frozen=True)
class CostDiff:
    """A run's cost against a reference on the ``n`` shared questions whose rows both record it
    (``skipped``: shared questions left out because a row lacks it), in the cost's own unit:
    the mean per-question difference (run minus reference) with its bootstrap interval, the
    questions where the run spent less and more, and the medians of both."""

    n: int
    mean: float
    low: float
    high: float
    less: int
    more: int
    same: int
    median: float  # the run's
    reference_median: float
    median_diff: float  # the median of the per-question differences
    skipped: int


def cost_value(row: Mapping[str, Any], cost: str) -> float | None:
    """One question's cost, or None when its row does not record it (a row written before the
    field existed): left out of that cost's statistics, never counted as 0."""
    if cost == "first_answer_s":
        return first_answer_seconds(row)
    value = row.get(cost)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value)


def paired_cost(
    run: Mapping[str, float | None],
    reference: Mapping[str, float | None],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> CostDiff | None:
    """``run`` minus ``reference`` on the question ids both record (costs by id, None where a
    row lacks it), ids sorted as in ``paired_diff``; None when no shared question records it."""
    shared = sorted(run.keys() & reference.keys())
    ids = [i for i in shared if run[i] is not None and reference[i] is not None]
    if not ids:
        return None
    mine = np.array([float(run[i]) for i in ids])  # type: ignore[arg-type]
    theirs = np.array([float(reference[i]) for i in ids])  # type: ignore[arg-type]
    diffs = mine - theirs
    low, high = bootstrap_interval(diffs, resamples=resamples, seed=seed)
    return CostDiff(
        n=len(ids),
        mean=float(diffs.mean()),
        low=low,
        high=high,
        less=int((diffs < -_TIE).sum()),
        more=int((diffs > _TIE).sum()),
        same=int((np.abs(diffs) <= _TIE).sum()),
        median=float(np.median(mine)),
        reference_median=float(np.median(theirs)),
        median_diff=float(np.median(diffs)),
        skipped=len(shared) - len(ids),
    )


def answers_changed(
    run: Mapping[str, Mapping[str, Any]], reference: Mapping[str, Mapping[str, Any]]
) -> int:
    """How many shared questions the two runs answer differently once both predictions are
    normalised as the scores normalise them (``normalize_answer_official``): "The Beatles." and
    "beatles" are the same answer."""
    return sum(
        normalize_answer_official(str(run[i].get("prediction") or ""))
        != normalize_answer_official(str(reference[i].get("prediction") or ""))
        for i in run.keys() & reference.keys()
    )


def mean_defined(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[float | None, int]:
    """The mean (percent) of a field over the rows where it is a number, and how many those
    were: a recall that is undefined for a question (nothing to find) is left out, not zero."""
    values = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    if not values:
        return None, 0
    return round(100.0 * sum(values) / len(values), 2), len(values)


# --------------------------------------------------------------------------- the analysis


@dataclass(frozen=True)
class RunRows:
    """One compared run: its label in the tables, its pipeline, its rows by question id."""

    label: str
    pipeline: str
    rows: Mapping[str, Mapping[str, Any]]

    @property
    def role(self) -> Role:
        return pipeline_role(self.pipeline)


@dataclass
class PairedComparison:
    """Everything the three markdown sections and the gains chart show, computed once."""

    runs: list[RunRows]
    ids: list[str]  # the questions every run finished, sorted
    resamples: int
    seed: int
    f1: dict[str, float]  # label -> mean F1 (percent) on ``ids``
    reference: str  # what "Paired gains" subtracts: the best one-call run, else the first run
    best_one_call: str | None
    oracle: str | None
    floor: str | None
    gains: dict[str, dict[str, PairedDiff]]  # label -> metric -> vs reference
    vs_best: dict[str, PairedDiff]  # label -> F1 vs the best one-call run
    vs_floor: dict[str, PairedDiff]  # label -> F1 vs no-retrieval
    headroom: dict[str, float | None]
    types: list[str]
    type_n: dict[str, int]
    type_f1: dict[str, dict[str, float]]  # label -> type -> mean F1 (percent)
    type_gains: dict[str, dict[str, PairedDiff]]  # agent label -> type -> F1 vs best one-call
    planner: str | None  # the first ``full`` run, which the ablations are read against
    ablations: dict[str, dict[str, PairedDiff]]  # ablation label -> metric -> minus the planner
    ablation_types: dict[str, dict[str, PairedDiff]]  # ablation label -> type -> F1 vs planner
    # costs are read against the first run given, whatever the gains are read against: "is B
    # faster than A on the same questions" names A first
    cost_reference: str = ""
    costs: dict[str, dict[str, CostDiff | None]] = field(default_factory=dict)  # label -> cost
    answers_changed: dict[str, int] = field(default_factory=dict)  # label -> vs cost_reference

    def role(self, label: str) -> Role:
        return next(r.role for r in self.runs if r.label == label)

    @property
    def agents(self) -> list[str]:
        return [r.label for r in self.runs if r.role == "agent"]


def _best(runs: Sequence[RunRows], role: Role, f1: Mapping[str, float]) -> str | None:
    """The run of a role with the highest mean F1; the first given wins a tie. The best one-call
    run is the baseline an agent must beat; of several oracles the highest is the ceiling
    actually reached; of several floors the highest, so no gain over it is flattered."""
    labels = [r.label for r in runs if r.role == role]
    return max(labels, key=lambda label: f1[label]) if labels else None


def analyse(
    runs: Sequence[RunRows],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairedComparison:
    """Every paired statistic over the questions all ``runs`` finished. One question set for
    all of them, so a headroom ratio never divides a gain on one set by a gap on another."""
    if len(runs) < 2:
        raise ValueError("a paired comparison needs two runs")
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        raise ValueError("compared runs need distinct labels")
    common = set.intersection(*[set(r.rows) for r in runs])
    if not common:
        raise ValueError("the runs have no finished question in common")
    ids = sorted(common)
    shared = [RunRows(r.label, r.pipeline, {i: r.rows[i] for i in ids}) for r in runs]
    by_label = {r.label: r for r in shared}
    metric_scores = {r.label: {m: scores(r.rows, m) for m in METRICS} for r in shared}
    f1 = {
        label: 100.0 * float(np.mean(list(s["f1"].values()))) for label, s in metric_scores.items()
    }

    best = _best(shared, "one-call", f1)
    oracle = _best(shared, "oracle", f1)
    floor = _best(shared, "no-retrieval", f1)
    reference = best or labels[0]

    def diff(
        label: str, against: str, metric: str = "f1", only: set[str] | None = None
    ) -> PairedDiff:
        run, ref = metric_scores[label][metric], metric_scores[against][metric]
        if only is not None:
            run = {i: v for i, v in run.items() if i in only}
        return paired_diff(run, ref, resamples=resamples, seed=seed)

    others = [label for label in labels if label != reference]
    gains = {label: {m: diff(label, reference, m) for m in METRICS} for label in others}
    vs_best: dict[str, PairedDiff] = {}
    headroom: dict[str, float | None] = {}
    if best is not None:  # then it is the reference: its gains are the ones above
        vs_best = {label: gains[label]["f1"] for label in others}
        ceiling = f1[oracle] if oracle else None
        headroom = {
            label: headroom_captured(f1[label], f1[best], ceiling)
            for label in others
            if label != oracle
        }
    vs_floor: dict[str, PairedDiff] = {}
    if floor is not None:
        vs_floor = {label: diff(label, floor) for label in labels if label != floor}

    # the type of a question is the dataset's, so the first run's rows name it for all
    type_of = {i: str(shared[0].rows[i].get("type") or "") for i in ids}
    types = sorted(set(type_of.values()) - {""})
    members = {t: {i for i in ids if type_of[i] == t} for t in types}
    type_f1 = {
        label: {
            t: 100.0 * float(np.mean([metric_scores[label]["f1"][i] for i in members[t]]))
            for t in types
        }
        for label in labels
    }
    type_gains: dict[str, dict[str, PairedDiff]] = {}
    if best is not None:
        type_gains = {
            label: {t: diff(label, best, only=members[t]) for t in types}
            for label in labels
            if by_label[label].role == "agent"
        }
    planner = next((r.label for r in shared if r.pipeline == PLANNER), None)
    ablations: dict[str, dict[str, PairedDiff]] = {}
    ablation_types: dict[str, dict[str, PairedDiff]] = {}
    if planner is not None:
        for label in (r.label for r in shared if r.pipeline in ABLATIONS):
            ablations[label] = {m: diff(label, planner, m) for m in METRICS}
            ablation_types[label] = {t: diff(label, planner, only=members[t]) for t in types}
    first = shared[0]
    drafted = any(has_drafts(list(r.rows.values())) for r in shared)
    cost_values = {
        r.label: {
            c: {i: cost_value(row, c) for i, row in r.rows.items()}
            for c in COSTS
            if c != "first_answer_s" or drafted
        }
        for r in shared
    }
    # a cost no row of any run records (rows made before it was) has no line at all
    shown = [
        c
        for c in cost_values[first.label]
        if any(v is not None for by_run in cost_values.values() for v in by_run[c].values())
    ]
    costs = {
        r.label: {
            c: paired_cost(
                cost_values[r.label][c], cost_values[first.label][c], resamples=resamples, seed=seed
            )
            for c in shown
        }
        for r in shared[1:]
        if shown
    }
    changed = {r.label: answers_changed(r.rows, first.rows) for r in shared[1:]}
    return PairedComparison(
        runs=shared,
        ids=ids,
        resamples=resamples,
        seed=seed,
        f1=f1,
        reference=reference,
        best_one_call=best,
        oracle=oracle,
        floor=floor,
        gains=gains,
        vs_best=vs_best,
        vs_floor=vs_floor,
        headroom=headroom,
        types=types,
        type_n={t: len(members[t]) for t in types},
        type_f1=type_f1,
        type_gains=type_gains,
        planner=planner,
        ablations=ablations,
        ablation_types=ablation_types,
        cost_reference=first.label,
        costs=costs,
        answers_changed=changed,
    )


# --------------------------------------------------------------------------- rendering


def _signed(value: float, digits: int = 1) -> str:
    """``+5.2``, ``-1.0``; ``0.0`` where it rounds to zero (no "-0.0" beside a "+0.0")."""
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def format_gain(diff: PairedDiff) -> str:
    """``+5.2 [-1.0, +11.4]``: points, signed, so a loss cannot be misread as a gain."""
    return f"{_signed(diff.mean)} [{_signed(diff.low)}, {_signed(diff.high)}]"


def format_wlt(diff: PairedDiff) -> str:
    return f"{diff.wins}/{diff.losses}/{diff.ties}"


def format_gain_wl(diff: PairedDiff) -> str:
    """``+5.2 [-1.0, +11.4] 3/1``: a gain with its wins and losses, one cell of a per-type row."""
    return f"{format_gain(diff)} {diff.wins}/{diff.losses}"


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, text: int = 1
) -> list[str]:
    """A markdown table: the first ``text`` columns (names) left-aligned, numbers right."""
    rule = "|" + "---|" * text + "---:|" * (len(header) - text)
    return ["| " + " | ".join(header) + " |", rule, *["| " + " | ".join(r) + " |" for r in rows]]


def gains_table(comparison: PairedComparison) -> tuple[list[str], list[list[str]]]:
    """Header and rows of "Paired gains": each run minus the reference, per metric, with the
    W/L/T on F1. Shared with the terminal table, so both say the same."""
    header = [
        "run",
        "role",
        "n",
        *[f"Δ{label} [95% CI]" for label in METRICS.values()],
        "W/L/T (F1)",
    ]
    rows = []
    for label, diffs in comparison.gains.items():
        rows.append(
            [
                label,
                comparison.role(label),
                str(diffs["f1"].n),
                *[format_gain(diffs[m]) for m in METRICS],
                format_wlt(diffs["f1"]),
            ]
        )
    return header, rows


def _gains_section(c: PairedComparison) -> list[str]:
    why = (
        "the best one-call RAG run on these questions"
        if c.reference == c.best_one_call
        else "the first run given (no one-call RAG run is among these)"
    )
    header, rows = gains_table(c)
    return [
        f"## Paired gains (95% bootstrap CI, {c.resamples} resamples, seed {c.seed})",
        "",
        f"On the {len(c.ids)} questions every run finished. Each run minus `{c.reference}` "
        f"({why}), in percentage points: the mean per-question difference and its percentile "
        "bootstrap interval over the questions. W/L/T: questions where the run's F1 is higher, "
        "lower, equal. An interval that excludes 0 is a difference this sample supports; "
        "the intervals are not corrected for comparing several runs at once.",
        "",
        *markdown_table(header, rows, text=2),
    ]


def _headroom_section(c: PairedComparison) -> list[str]:
    lines = ["## Headroom", ""]
    best, oracle, floor = c.best_one_call, c.oracle, c.floor
    if best is None and floor is None:
        return [
            *lines,
            "No one-call RAG run (bm25, dense, hybrid) and no `no-retrieval` run among these: "
            "nothing to measure headroom against.",
        ]
    said = []
    if best is not None:
        said.append(
            f"Best one-call RAG: `{best}` (F1 {c.f1[best]:.1f}, the highest of the one-call runs "
            "on these questions, which favours it slightly)."
        )
    else:
        said.append("No one-call RAG run (bm25, dense, hybrid) among these: no headroom.")
    if oracle is not None:
        said.append(f"Oracle (gold paragraphs only): `{oracle}` (F1 {c.f1[oracle]:.1f}).")
    if floor is not None:
        said.append(f"Floor (closed book): `{floor}` (F1 {c.f1[floor]:.1f}).")
    if best is not None:
        if oracle is None:
            said.append("Headroom captured is n/a: no oracle run among these.")
        elif c.f1[oracle] <= c.f1[best]:
            said.append("Headroom captured is n/a: the oracle does not beat the best one-call run.")
        else:
            said.append(
                "Headroom captured = (run - best one-call) / (oracle - best one-call), on mean F1."
            )
    header = ["run", "role", "F1"]
    if best is not None:
        header += [f"ΔF1 vs {best} [95% CI]", "W/L/T", "headroom captured"]
    if floor is not None:
        header += [f"ΔF1 vs {floor} [95% CI]", "W/L/T"]
    rows = []
    for run in c.runs:
        label = run.label
        cells = [label, run.role, f"{c.f1[label]:.1f}"]
        if best is not None:
            if label == best:
                cells += ["(reference)", "", ""]
            else:
                gain = c.vs_best[label]
                room = c.headroom.get(label)
                captured = "ceiling" if label == oracle else _percent_or_na(room)
                cells += [format_gain(gain), format_wlt(gain), captured]
        if floor is not None:
            if label == floor:
                cells += ["(reference)", ""]
            else:
                cells += [format_gain(c.vs_floor[label]), format_wlt(c.vs_floor[label])]
        rows.append(cells)
    return [*lines, " ".join(said), "", *markdown_table(header, rows, text=2)]


def _percent_or_na(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _type_section(c: PairedComparison) -> list[str]:
    lines = ["## By question type", ""]
    if not c.types:
        return [*lines, "The rows record no question type."]
    labels = [r.label for r in c.runs]
    rows = [
        [t, str(c.type_n[t]), *[f"{c.type_f1[label][t]:.1f}" for label in labels]] for t in c.types
    ]
    rows.append(["all", str(len(c.ids)), *[f"{c.f1[label]:.1f}" for label in labels]])
    lines += [
        "Mean F1 per question type on the shared questions.",
        "",
        *markdown_table(["type", "n", *labels], rows),
    ]
    if c.type_gains:
        best = c.best_one_call
        agents = list(c.type_gains)
        gain_rows = [
            [
                t,
                str(c.type_n[t]),
                *[format_gain_wl(c.type_gains[a][t]) for a in agents],
            ]
            for t in c.types
        ]
        gain_rows.append(
            [
                "all",
                str(len(c.ids)),
                *[format_gain_wl(c.vs_best[a]) for a in agents],
            ]
        )
        lines += [
            "",
            f"Paired F1 gain of each agent run over `{best}` per type: points [95% CI] W/L. "
            "A type with few questions has a wide interval; read it as such.",
            "",
            *markdown_table(["type", "n", *agents], gain_rows),
        ]
    return lines


def _ablation_section(c: PairedComparison) -> list[str]:
    """Each LevelRAG ablation minus the planner: what switching one step off costs, overall and
    per question type (the gains table reads every agent run against one-call RAG instead)."""
    planner = c.planner
    assert planner is not None  # there are ablation rows only when a planner run is compared
    pipeline = {r.label: r.pipeline for r in c.runs}
    header = [
        "run",
        "step off",
        "F1",
        *[f"Δ{label} vs {planner} [95% CI]" for label in METRICS.values()],
        "W/L/T (F1)",
        *[f"{t} (n={c.type_n[t]}) ΔF1 W/L" for t in c.types],
    ]
    rows = [
        [
            label,
            ABLATIONS[pipeline[label]],
            f"{c.f1[label]:.1f}",
            *[format_gain(diffs[m]) for m in METRICS],
            format_wlt(diffs["f1"]),
            *[format_gain_wl(c.ablation_types[label][t]) for t in c.types],
        ]
        for label, diffs in c.ablations.items()
    ]
    return [
        "## Ablations",
        "",
        f"LevelRAG's switches: each run minus `{planner}` (F1 {c.f1[planner]:.1f}) on the same "
        f"{len(c.ids)} questions, so a run below it says what the step it switched off is worth. "
        "W/L: questions where the ablation scores higher, lower than the planner.",
        "",
        *markdown_table(header, rows, text=2),
    ]


def format_cost(diff: CostDiff, digits: int) -> str:
    """``-12.1 [-16.8, -7.9]``: the mean difference and its interval, signed, in the cost's unit."""
    return (
        f"{_signed(diff.mean, digits)} [{_signed(diff.low, digits)}, {_signed(diff.high, digits)}]"
    )


def cost_table(comparison: PairedComparison) -> tuple[list[str], list[list[str]]]:
    """Header and rows of "Paired cost": each run minus the first run, per cost. Shared with
    the terminal table, so both say the same."""
    reference = comparison.cost_reference
    header = [
        "run",
        "cost",
        "n",
        "Δ mean [95% CI]",
        "less/more/same",
        "median",
        f"median {reference}",
        "median Δ",
    ]
    rows = []
    for label, costs in comparison.costs.items():
        for cost, diff in costs.items():
            name, digits = COSTS[cost]
            if diff is None:
                rows.append([label, name, "0", "n/a", "", "", "", ""])
                continue
            middle = 1 if digits == 0 else digits  # a median of an even count can end in .5
            rows.append(
                [
                    label,
                    name,
                    str(diff.n),
                    format_cost(diff, digits),
                    f"{diff.less}/{diff.more}/{diff.same}",
                    f"{diff.median:.{middle}f}",
                    f"{diff.reference_median:.{middle}f}",
                    _signed(diff.median_diff, middle),
                ]
            )
    return header, rows


SECONDS_CAUTION = (
    "Seconds compare only between runs made interleaved (the arms in turn, question by "
    "question) on an otherwise idle machine, each run on a model server of its own: llama.cpp "
    "keeps earlier prompts in RAM, and a question asked again on one server reads its prompt "
    "from there (`docs/evaluation.md`)."
)


def cost_notes(comparison: PairedComparison) -> list[str]:
    """What the cost table needs said beside it: how many answers changed, the caution about
    seconds, and the questions a cost's statistics left out because a row lacks it."""
    reference = comparison.cost_reference
    n = len(comparison.ids)
    changed = "; ".join(f"`{label}` {k} of {n}" for label, k in comparison.answers_changed.items())
    notes = [
        f"Answers changed against `{reference}` (predictions that differ after the scores' "
        f"answer normalisation): {changed}."
    ]
    if any(c in TIMES for costs in comparison.costs.values() for c in costs):
        notes.append(SECONDS_CAUTION)
    for label, costs in comparison.costs.items():
        for cost, diff in costs.items():
            left = n if diff is None else diff.skipped
            if left:
                field = "first_answer_s or seconds" if cost == "first_answer_s" else cost
                notes.append(
                    f"`{label}`: {left} of the {n} shared questions have a row without "
                    f"`{field}` (written before it was recorded), left out of the "
                    f"{COSTS[cost][0]} statistics, not counted as 0."
                )
    return notes


def _cost_section(c: PairedComparison) -> list[str]:
    header, rows = cost_table(c)
    return [
        "## Paired cost",
        "",
        f"On the {len(c.ids)} questions every run finished. Each run minus `{c.cost_reference}` "
        "(the first run given), per question: the mean difference in the cost's unit with its "
        f"percentile bootstrap 95% interval ({c.resamples} resamples, seed {c.seed}); less/more/"
        "same: questions where the run spent less (for seconds: was faster), more, the same; the "
        "medians of both runs, and the median of the per-question differences.",
        "",
        *markdown_table(header, rows, text=2),
        *[line for note in cost_notes(c) for line in ("", note)],
    ]


def paired_markdown(comparison: PairedComparison) -> str:
    """The sections below the means table of ``hoptree eval compare --markdown``: paired gains,
    headroom, per type, the ablations against the planner when both are among the runs, and
    each run's cost against the first run."""
    sections = [
        _gains_section(comparison),
        _headroom_section(comparison),
        _type_section(comparison),
    ]
    if comparison.ablations:
        sections.append(_ablation_section(comparison))
    if comparison.costs:
        sections.append(_cost_section(comparison))
    return "\n\n".join("\n".join(lines) for lines in sections) + "\n"
