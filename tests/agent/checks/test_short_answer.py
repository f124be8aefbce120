"""The short answer's no-call rules applied in their order, no planner: grounding in the
passages, the bridge's last hop, a resolved chain's end, a computed comparison."""

from __future__ import annotations

from agent.checks.chains import Hop
from agent.checks.citations import SourceText
from agent.checks.evidence import Finding
from agent.checks.short_answer import settle_short_answer
from agent.rules.question import Question

CHAIN = [Hop("q1", (), None, "Mira Solt"), Hop("q2", ("q1",), None, "tuberculosis")]
WIFE = Question.read("Why did the wife of Tom Arlen die?")
SHOWN = [SourceText(1, "Mira Solt", "Mira Solt, Tom Arlen's wife, died of tuberculosis in 1923.")]


def test_a_written_answer_is_snapped_onto_the_passages_wording() -> None:
    shown = [SourceText(1, "Beyoncé", "Beyoncé performed at the Cain's Ballroom in 2001.")]
    where = Question.read("Where did Beyoncé perform?")
    settled = settle_short_answer("Cain Ballroom", "", shown, where, [], [], follow_chain=True)
    assert (settled.text, settled.grounded) == ("Cain's Ballroom", True)
    assert (settled.last_hop, settled.chain_end, settled.comparison) == (None, None, None)


def test_a_bridge_answer_moves_on_and_the_chain_end_is_reported() -> None:
    settled = settle_short_answer("Mira Solt", "", SHOWN, WIFE, CHAIN, [], follow_chain=True)
    assert (settled.text, settled.grounded) == ("tuberculosis", True)
    assert settled.last_hop == "tuberculosis" and settled.chain_end == "tuberculosis"


def test_the_chain_end_replaces_another_answer_only_when_chains_are_followed() -> None:
    followed = settle_short_answer("the flu", "", SHOWN, WIFE, CHAIN, [], follow_chain=True)
    assert (followed.text, followed.grounded, followed.last_hop) == ("tuberculosis", True, None)
    ignored = settle_short_answer("the flu", "", SHOWN, WIFE, CHAIN, [], follow_chain=False)
    assert (ignored.text, ignored.grounded, ignored.chain_end) == ("the flu", False, None)
    asked = Question.read("Did the wife of Tom Arlen die young?")
    yes_no = settle_short_answer("yes", "", SHOWN, asked, CHAIN, [], follow_chain=True)
    assert (yes_no.text, yes_no.chain_end) == ("yes", None)


def test_the_chain_end_written_by_the_reader_is_grounded_by_its_finding() -> None:
    # the answer step's window of the passage does not hold the span; the chain's hop did
    window = [SourceText(1, "Mira Solt", "Mira Solt was Tom Arlen's wife.")]
    settled = settle_short_answer("tuberculosis", "", window, WIFE, CHAIN, [], follow_chain=True)
    assert (settled.text, settled.grounded, settled.chain_end) == (
        "tuberculosis",
        True,
        "tuberculosis",
    )
    alone = settle_short_answer("tuberculosis", "", window, WIFE, CHAIN, [], follow_chain=False)
    assert alone.grounded is False


def test_a_comparison_the_findings_decide_is_computed_last() -> None:
    question = Question.read("Who was born first, Morgan Llywelyn or Robert Jordan?")
    findings = [
        Finding("birth date of Morgan Llywelyn", "December 3, 1937", ("m",)),
        Finding("birth date of Robert Jordan", "October 17, 1948", ("r",)),
    ]
    written = "Robert Jordan was born first."
    settled = settle_short_answer(
        "Robert Jordan", written, [], question, [], findings, follow_chain=True
    )
    assert (settled.text, settled.grounded) == ("Morgan Llywelyn", True)
    assert settled.comparison is not None and settled.comparison.picked == "Morgan Llywelyn"


def test_yes_is_no_chains_answer_to_a_question_that_asks_something_else() -> None:
    """The second hop ("military expedition in Beijing") was read as "Yes": the chain does not
    end there, the reader's name stands, and a "Yes" the reader writes itself is not grounded
    (a draft or another answer is then preferred), while a yes/no question keeps it."""
    hops = [Hop("q1", (), None, "Beijing"), Hop("q2", ("q1",), None, "Yes")]
    who = Question.read("Who led the military expedition in the city where the fight occurred?")
    shown = [SourceText(1, "Chen Zheng", "Chen Zheng led a military expedition to Beijing.")]
    settled = settle_short_answer("Chen Zheng", "", shown, who, hops, [], follow_chain=True)
    assert (settled.text, settled.grounded, settled.chain_end) == ("Chen Zheng", True, None)
    moved = settle_short_answer("Beijing", "", shown, who, hops, [], follow_chain=True)
    assert moved.last_hop is None and moved.text == "Beijing"
    written = settle_short_answer("Yes", "", shown, who, [], [], follow_chain=True)
    assert (written.text, written.grounded) == ("Yes", False)
    asked = Question.read("Did Chen Zheng lead a military expedition?")
    kept = settle_short_answer("Yes", "", shown, asked, [], [], follow_chain=True)
    assert (kept.text, kept.grounded) == ("Yes", True)
