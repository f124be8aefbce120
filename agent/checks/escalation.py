"""Whether the planner runs after the one-call draft, and which answer wins when it does.

The router between the draft (one call) and the plan (about six) reads signals that exist right
after the draft and cost no call: the question's shape (``route_shape``), whether the draft's
short answer is a span of its passages, is empty or only restates the question, and its answer
tokens' log-probabilities (``answer_logprobs``). The rule is a handful of readable conditions,
not a classifier; its anchors (Adaptive-RAG, RASER, FLARE/DRAGIN) and its fit are in
docs/architecture.md ("Why the planner is the way it is") and ``benchmarks/results/router.md``.
Pure functions: the planner, ``hoptree_agent`` and the router's replays read the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from agent.checks.chains import same_answer
from agent.checks.citations import SourceText, ground_short_answer
from agent.rules.answer_text import is_alternative, restates, unknown_like
from agent.rules.question import Question, Shape
from agent.settings import RouterSettings
from searchers.text import normalize_answer_folded
from searchers.verification import YES_NO

RouteShape = Literal["chain", "comparison", "choice", "single"]
# the question's shapes (agent.rules.shape.Shape) as the router groups them
_FROM_SHAPE: dict[Shape, RouteShape] = {
    "composition": "chain",
    "inference": "chain",  # a family relation: a chain of parent/child/spouse steps
    "comparison": "comparison",
    "bridge_comparison": "comparison",
    "single": "single",
}


def route_shape(question: Question) -> RouteShape:
    """The router's shape of ``question``: ``choice`` when it offers two named alternatives
    ("Which band formed first, A or B?": ``Question.choices``), else its shape
    (``Question.shape``) grouped: a description to resolve first or a family relation is a
    ``chain``, any other comparison ("Are A and B both ...?") a ``comparison``, the rest
    ``single``."""
    if len(question.choices) >= 2:
        return "choice"
    return _FROM_SHAPE[question.shape]


@dataclass(frozen=True)
class Signals:
    """What is known, for free, right after the draft. ``logprob_*`` are the draft's token
    log-probabilities (natural log) when the model server returned them; ``top_score`` is the
    draft's best retrieval score when the searcher recorded one. Both may be absent."""

    shape: RouteShape
    supported: bool  # the draft's short answer is a span of the passages it was shown
    empty: bool  # "", "unknown", "not stated", ...
    restates: bool  # only the question's own words, not an offered alternative
    yes_no: bool  # the question asks yes or no (a draft "yes" has no span to check)
    logprob_mean: float | None = None
    logprob_min: float | None = None
    top_score: float | None = None

    @property
    def weak(self) -> bool:
        """The draft cannot stand as the answer: empty, a restated name, or (for a question
        that is not yes/no) a span its passages do not hold."""
        return self.empty or self.restates or (not self.yes_no and not self.supported)

    def as_dict(self) -> dict[str, object]:
        """For the trace and the JSON result: every field, and ``weak``."""
        return {**asdict(self), "weak": self.weak}


def logprob_summary(logprobs: Sequence[float]) -> tuple[float | None, float | None]:
    """(mean, min) of the draft's token log-probabilities; (None, None) without any. Values
    that are not finite numbers (a server's -inf for a forced token) are left out."""
    finite = [float(x) for x in logprobs if math.isfinite(float(x))]
    if not finite:
        return None, None
    return sum(finite) / len(finite), min(finite)


def answer_logprobs(tokens: Sequence[tuple[str, float]], answer: str) -> list[float]:
    """The log-probabilities of the reply tokens that wrote ``answer`` (the JSON value), not of
    the JSON around it, which the schema forces and says nothing of the model's confidence:
    the tokens overlapping the last place the reply's text holds ``answer``. All of them when
    the answer cannot be found in the tokens (an escaped quote, a server that tokenizes
    differently); none without tokens."""
    if not tokens:
        return []
    text = "".join(token for token, _ in tokens)
    start = text.rfind(answer) if answer else -1
    if start < 0:
        return [lp for _, lp in tokens]
    end = start + len(answer)
    chosen, at = [], 0
    for token, lp in tokens:
        if at < end and at + len(token) > start:
            chosen.append(lp)
        at += len(token)
    return chosen


def draft_signals(
    question: Question,
    draft: str,
    shown: Sequence[SourceText],
    *,
    logprobs: Sequence[float] = (),
    top_score: float | None = None,
) -> Signals:
    """The signals of the draft short answer ``draft`` to ``question``, read against the
    passages the draft was shown (``shown``)."""
    empty = unknown_like(draft)
    supported = False
    if not empty:
        _, supported = ground_short_answer(draft, shown)
    mean, low = logprob_summary(logprobs)
    return Signals(
        shape=route_shape(question),
        supported=supported,
        empty=empty,
        restates=not empty and restates(draft, question.text, offered=question.choices),
        yes_no=question.yes_no or normalize_answer_folded(draft) in YES_NO,
        logprob_mean=mean,
        logprob_min=low,
        top_score=top_score,
    )


# --------------------------------------------------------------------------- the decision

# ``RouterSettings`` (``PlannerSettings.router``): ``always`` and ``never`` ignore the signals;
# ``fitted`` (the default, fitted on the tuning drafts) plans a question of one of its ``shapes``
# and one whose least likely answer token is below ``min_logprob``.
FITTED = RouterSettings()


@dataclass(frozen=True)
class Decision:
    escalate: bool
    reason: str  # for the trace: which condition decided


def decide(signals: Signals, policy: RouterSettings = FITTED) -> Decision:
    """Whether the planner runs after the draft, and why (module doc; the fit is in
    ``benchmarks/results/router.md``)."""
    if policy.policy == "always":
        return Decision(True, "policy: always plan")
    if policy.policy == "never":
        return Decision(False, "policy: never plan")
    if signals.shape in policy.shapes:
        return Decision(True, f"shape: {signals.shape}")
    if policy.min_logprob is not None:
        if signals.logprob_min is None and signals.shape == "chain":
            # no confidence to read (the server sent no log-probabilities): a chain is what
            # the plan is for, so it is planned, as before the floor was fitted
            return Decision(True, "shape: chain")
        if signals.logprob_min is not None and signals.logprob_min < policy.min_logprob:
            return Decision(True, f"low confidence: min logprob {signals.logprob_min:.2f}")
    return Decision(False, "draft stands: " + ("yes/no" if signals.yes_no else "supported"))


# --------------------------------------------------------------------------- the final choice

PlanKind = Literal["resolved", "comparison", "open"]


@dataclass(frozen=True)
class Candidate:
    """One answer and whether its evidence holds it: for the draft, its short answer is a span
    of its shown passages; for a resolved chain, its last finding is supported (every hop is,
    or the plan would be open); for a comparison, both values it compared are."""

    answer: str
    supported: bool


@dataclass(frozen=True)
class FinalChoice:
    answer: str
    source: Literal["draft", "plan"]
    reason: str


def final_choice(
    draft: Candidate, kind: PlanKind, plan: Candidate | None, alternatives: Sequence[str] = ()
) -> FinalChoice:
    """Which answer the person gets when the plan ran. An open plan answers with the draft
    (nothing is read twice). A computed comparison or a resolved chain replaces the draft when
    its support is stronger: the plan's answer is supported and rests on a supported finding
    for every hop (or for both compared values), where the draft rests on one read of the
    question's own hits. An unsupported plan answer never replaces the draft (the measurement:
    docs/architecture.md), nor does one that is none of the question's ``alternatives`` when the
    draft names one ("A or B?" is answered by A or B: issue 65 item 6)."""
    if kind == "open" or plan is None or not plan.answer.strip():
        return FinalChoice(draft.answer, "draft", "plan open: the draft stands")
    if same_answer(draft.answer, plan.answer):
        return FinalChoice(plan.answer, "plan", f"{kind} agrees with the draft")
    if kind == "comparison":
        return FinalChoice(plan.answer, "plan", "computed comparison over supported findings")
    if is_alternative(draft.answer, alternatives) and not is_alternative(plan.answer, alternatives):
        return FinalChoice(
            draft.answer, "draft", "chain answer is no alternative: the draft stands"
        )
    if plan.supported:
        why = "a weak draft" if unknown_like(draft.answer) or not draft.supported else "one read"
        return FinalChoice(plan.answer, "plan", f"supported chain over {why}")
    return FinalChoice(draft.answer, "draft", "chain answer unsupported: the draft stands")
