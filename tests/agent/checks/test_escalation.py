"""The draft-first router's rules (``agent.checks.escalation``): the question's route shape, the
draft's signals, the escalation decision under each policy, and the final choice."""

from __future__ import annotations

import dataclasses

import pytest

from agent.checks.citations import SourceText
from agent.checks.escalation import (
    FITTED,
    Candidate,
    Decision,
    Signals,
    decide,
    draft_signals,
    final_choice,
    logprob_summary,
    route_shape,
)
from agent.rules.question import Question
from agent.rules.shape import SHAPES
from agent.settings import RouterSettings

BAND = Question.read(
    "The band who released the debut album Tinted Windows had their first performance in what city?"
)
SHOWN = [
    SourceText(1, "Tinted Windows (band)", "Tinted Windows played their first show in Tulsa."),
    SourceText(2, "Tinted Windows (album)", "Tinted Windows is the debut album of the band."),
]


def shape(question: str) -> str:
    return route_shape(Question.read(question))


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which band was formed first, Tinted Windows or Hanson?", "choice"),
        ("Are Pavel Urysohn and Leonid Levin both mathematicians?", "comparison"),
        (BAND.text, "chain"),
        ("Who is the maternal grandfather of Edward VI?", "chain"),
        ("What year was Hanson formed?", "single"),
    ],
)
def test_route_shape_reads_the_question(question: str, expected: str) -> None:
    assert shape(question) == expected


def test_every_question_shape_has_a_route_shape() -> None:
    single = Question.read("What year was Hanson formed?")
    assert single.shape == "single"
    routed = {s: route_shape(dataclasses.replace(single, shape=s)) for s in SHAPES}
    assert routed == {
        "comparison": "comparison",
        "bridge_comparison": "comparison",
        "inference": "chain",
        "composition": "chain",
        "single": "single",
    }
    offered = Question.read("Which band was formed first, Tinted Windows or Hanson?")
    assert offered.shape == "comparison" and route_shape(offered) == "choice"


def test_a_draft_in_its_passages_is_supported() -> None:
    signals = draft_signals(BAND, "Tulsa", SHOWN)
    assert signals.supported and not signals.weak
    assert signals.shape == "chain"


def test_a_draft_missing_from_its_passages_is_weak() -> None:
    signals = draft_signals(BAND, "Chicago", SHOWN)
    assert not signals.supported and signals.weak


def test_an_empty_draft_is_weak_and_not_checked() -> None:
    signals = draft_signals(BAND, "unknown", SHOWN)
    assert signals.empty and not signals.supported and signals.weak


def test_a_draft_restating_the_question_is_weak() -> None:
    signals = draft_signals(BAND, "Tinted Windows", SHOWN)
    assert signals.restates and signals.weak


def test_a_yes_no_draft_is_not_weak_without_a_span() -> None:
    question = Question.read("Are Pavel Urysohn and Leonid Levin both mathematicians?")
    signals = draft_signals(question, "yes", [])
    assert signals.yes_no and not signals.weak


def test_logprobs_are_summarised_and_optional() -> None:
    assert logprob_summary([]) == (None, None)
    assert logprob_summary([-0.5, float("-inf"), -1.5]) == (-1.0, -1.5)
    signals = draft_signals(BAND, "Tulsa", SHOWN, logprobs=[-0.1, -2.0])
    assert signals.logprob_min == -2.0
    assert signals.as_dict()["logprob_mean"] == pytest.approx(-1.05)


def _signals(**changes: object) -> Signals:
    base = {"shape": "single", "supported": True, "empty": False, "restates": False}
    return Signals(**{**base, "yes_no": False, **changes})  # type: ignore[arg-type]


def test_always_and_never_ignore_the_signals() -> None:
    strong, weak = _signals(), _signals(supported=False)
    assert decide(strong, RouterSettings(policy="always")).escalate
    assert not decide(weak, RouterSettings(policy="never")).escalate


@pytest.mark.parametrize("shape_", ["chain", "choice", "comparison"])
def test_the_fitted_rule_plans_chains_and_comparisons(shape_: str) -> None:
    decision = decide(_signals(shape=shape_), FITTED)
    assert decision.escalate and shape_ in decision.reason


def test_the_fitted_rule_plans_a_chain_however_sure_its_draft() -> None:
    # a confident wrong draft of a chain is the report slices' loss (MuSiQue, 2Wiki): the
    # shape decides before the floor does
    sure = _signals(shape="chain", logprob_min=-0.05, logprob_mean=-0.01)
    assert decide(sure, FITTED) == Decision(True, "shape: chain")
    assert not decide(sure, RouterSettings(shapes=("choice", "comparison"))).escalate


def test_the_fitted_rule_keeps_a_single_fact_draft() -> None:
    assert not decide(_signals(), FITTED).escalate
    assert not decide(_signals(supported=False), FITTED).escalate  # weak drafts: off by default


def test_a_low_logprob_escalates_only_when_a_floor_is_set() -> None:
    unsure = _signals(logprob_min=-3.0)
    assert not decide(unsure, RouterSettings(min_logprob=None)).escalate
    assert decide(unsure, FITTED).escalate  # the default floor is -1.0
    assert not decide(_signals(logprob_min=-0.5), FITTED).escalate
    floor = RouterSettings(shapes=(), min_logprob=-2.0)
    assert decide(unsure, floor).escalate
    assert not decide(_signals(logprob_min=-1.0), floor).escalate
    assert not decide(_signals(), floor).escalate  # no logprobs recorded: the floor is silent


def test_a_policy_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="policy"):
        RouterSettings(policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shapes"):
        RouterSettings(shapes=("riddle",))  # type: ignore[arg-type]


def test_an_open_plan_keeps_the_draft() -> None:
    chosen = final_choice(Candidate("Tulsa", True), "open", Candidate("Chicago", True))
    assert (chosen.answer, chosen.source) == ("Tulsa", "draft")


def test_a_plan_that_agrees_is_taken() -> None:
    chosen = final_choice(Candidate("Tulsa", True), "resolved", Candidate("Tulsa, Oklahoma", True))
    assert chosen.answer == "Tulsa, Oklahoma" and "agrees" in chosen.reason


def test_a_computed_comparison_wins() -> None:
    chosen = final_choice(
        Candidate("Hanson", True), "comparison", Candidate("Tinted Windows", True)
    )
    assert (chosen.answer, chosen.source) == ("Tinted Windows", "plan")


def test_a_supported_chain_replaces_the_draft() -> None:
    chosen = final_choice(Candidate("1997", True), "resolved", Candidate("August 8, 1975", True))
    assert chosen.source == "plan" and "one read" in chosen.reason
    weak = final_choice(Candidate("unknown", False), "resolved", Candidate("Tulsa", True))
    assert weak.source == "plan" and "weak draft" in weak.reason


def test_a_chain_answering_no_alternative_does_not_replace_a_draft_that_names_one() -> None:
    """Issue 65 item 6: "A or B?" is answered by A or B (the Apache manual's httpd-c04: a
    supported chain said "mod_rewrite" to "mod_macro or mod_proxy_fdpass?")."""
    offered = ("mod_macro", "mod_proxy_fdpass")
    draft = Candidate("mod_proxy_fdpass", True)
    kept = final_choice(draft, "resolved", Candidate("mod_rewrite", True), offered)
    assert (kept.answer, kept.source) == ("mod_proxy_fdpass", "draft")
    assert "no alternative" in kept.reason
    # an alternative the chain reached still replaces the draft; a draft naming none does not
    # hold the plan back
    assert final_choice(draft, "resolved", Candidate("mod_macro", True), offered).source == "plan"
    loose = final_choice(
        Candidate("Apache", True), "resolved", Candidate("mod_rewrite", True), offered
    )
    assert loose.source == "plan"


def test_an_unsupported_chain_does_not_replace_the_draft() -> None:
    chosen = final_choice(Candidate("Tulsa", True), "resolved", Candidate("Chicago", False))
    assert (chosen.answer, chosen.source) == ("Tulsa", "draft")
    empty = final_choice(Candidate("Tulsa", True), "resolved", Candidate("  ", True))
    assert empty.source == "draft"


def test_the_router_is_a_section_of_the_planner_settings() -> None:
    """One type: the planner's ``router`` is the policy ``decide`` reads; a bare policy name
    (``HOPTREE_PLANNER__ROUTER=never``) sets the policy alone."""
    from agent.settings import PlannerSettings

    assert PlannerSettings().router == FITTED == RouterSettings()
    assert PlannerSettings(router="never").router == RouterSettings(policy="never")  # type: ignore[arg-type]
    narrow = PlannerSettings(router={"shapes": ["choice"], "min_logprob": -0.5})  # type: ignore[arg-type]
    assert narrow.router.shapes == ("choice",) and narrow.router.policy == "fitted"
    with pytest.raises(ValueError, match="shapes"):
        PlannerSettings(router={"shapes": ["single"]})  # type: ignore[arg-type]
