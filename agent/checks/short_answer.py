"""The short answer a run gives: what the reader wrote, put through every no-call rule in turn.

Each rule mends one way the 1.5B reader's short answer goes wrong, and a later one overrides an
earlier one, so they are applied here in one place and in this order:

1. snapped onto the passages' wording, "Cain Ballroom" to "Cain's Ballroom"
   (``citations.ground_short_answer``);
2. an "A or B?" question's answer taken to the alternative it names (``answer_text.pick_choice``);
3. a bridge entity moved on to the finding of the hop it bridges to (``chains.last_hop``), unless
   the question offers alternatives;
4. a resolved chain's answer: its last hop's finding (``chains.chain_end``), when the planner
   follows its chains and the question is neither yes/no nor "A or B?";
5. put in the unit the question asks for, 1710 as "18th century" (``values.in_asked_unit``);
6. an "A or B?" question with a date or a number found for each: computed, not read
   (``comparison.resolve``).

"Yes" or "no" answers only a yes/no question: a hop's finding "Yes" is no chain's answer, and a
short answer "Yes" to any other question is not grounded, so a draft or a plan's answer that
reads something else is preferred to it (``says_yes_or_no``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.checks.chains import Hop, chain_end, last_hop, same_answer
from agent.checks.citations import SourceText, ground_short_answer
from agent.checks.comparison import Comparison, resolve
from agent.checks.evidence import Finding
from agent.rules.answer_text import pick_choice
from agent.rules.question import Question
from agent.rules.values import in_asked_unit
from searchers.text import normalize_answer_folded
from searchers.verification import YES_NO


@dataclass(frozen=True)
class ShortAnswer:
    """The short answer, and which rules set it (the answer step's report names them)."""

    text: str
    grounded: bool  # a span of the passages shown, or a supported finding a rule chose
    last_hop: str | None = None  # the finding a bridge entity was moved on to (rule 3)
    chain_end: str | None = None  # the resolved chain's last finding (rule 4), used or not
    comparison: Comparison | None = None  # the computed "A or B?" (rule 6)


def settle_short_answer(
    written: str,
    long: str,
    sources: Sequence[SourceText],
    question: Question,
    hops: Sequence[Hop],
    findings: Sequence[Finding],
    *,
    follow_chain: bool,
) -> ShortAnswer:
    """The short answer ``written`` by the reader (``long`` is its cited answer) after the rules
    above, read against the passages shown, the plan's ``hops`` and its supported ``findings``;
    what the ``question`` offers and asks for is read from it, not from its words.
    ``follow_chain``: the planner's findings and chain answer are switched on."""
    short, grounded = ground_short_answer(written, sources)
    short = pick_choice(short, long, question.choices)
    offers_choices = bool(question.choices)
    bridged_to = None if offers_choices else last_hop(short, hops, asks_when=question.asks_when)
    if bridged_to is not None and says_yes_or_no(bridged_to, question):
        bridged_to = None
    if bridged_to is not None:
        short, grounded = bridged_to, True
    chained = (
        chain_end(hops, asks_when=question.asks_when)
        if follow_chain and not question.yes_no and not offers_choices
        else None
    )
    if chained is not None and says_yes_or_no(chained, question):
        chained = None
    if chained is not None:
        # the chain's end is a supported finding: the answer rests on it whether the reader
        # wrote it or not (a passage window the answer step was shown can miss the span that
        # the hop's own passage held: 2Wiki's "Flora" for Henrik Selberg's father's birthplace)
        short = short if same_answer(short, chained) else chained
        grounded = True
    short = in_asked_unit(short, question.unit)
    comparison = resolve(question, [(f.query, f.answer) for f in findings])
    if comparison is not None:
        short, grounded = comparison.picked, True
    if says_yes_or_no(short, question):
        grounded = False
    return ShortAnswer(short, grounded, bridged_to, chained, comparison)


def says_yes_or_no(answer: str, question: Question) -> bool:
    """``answer`` is "yes" or "no" and ``question`` asks something else. The 1.5B reader answers
    a hop phrased as a phrase ("nominated for Walter Huston") with "Yes", and a resolved chain
    then ended on it (``evals/results/v9/yes-no-replay.md``)."""
    return not question.yes_no and normalize_answer_folded(answer) in YES_NO
