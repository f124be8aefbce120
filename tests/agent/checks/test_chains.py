"""The short answer follows a planned chain to its last hop instead of stopping at the bridge."""

from __future__ import annotations

from agent.checks.chains import Hop, chain_end, last_hop
from agent.rules.question import Question

# "Why did the wife of Tom Arlen die?": q1 finds the wife, q2 was sent with her name filled in
CHAIN = [
    Hop("q1", (), None, "Mira Solt"),
    Hop("q2", ("q1",), None, "tuberculosis"),
]


def when(question: str) -> bool:
    """Does ``question`` ask when, as the planner reads it (``Question.asks_when``)?"""
    return Question.read(question).asks_when


def test_a_bridge_answer_moves_to_the_last_hop() -> None:
    assert last_hop("Mira Solt", CHAIN) == "tuberculosis"
    assert last_hop("Mira Solt, the novelist", CHAIN) == "tuberculosis"  # the reader adds words


def test_the_last_hop_or_an_unrelated_answer_stays_as_it_is() -> None:
    assert last_hop("tuberculosis", CHAIN) is None
    assert last_hop("Paris", CHAIN) is None


def test_no_move_when_the_next_hop_found_nothing_or_the_chain_forks() -> None:
    unanswered = [CHAIN[0], Hop("q2", ("q1",), None, None)]
    assert last_hop("Mira Solt", unanswered) is None
    forked = [*CHAIN, Hop("q3", ("q1",), None, "1923")]
    assert last_hop("Mira Solt", forked) is None


def test_a_follow_up_that_answered_the_next_hop_stands_in_for_it() -> None:
    hops = [
        CHAIN[0],
        Hop("q2", ("q1",), None, None, superseded=True),
        Hop("q3", (), "q2", "pleurisy"),
    ]
    assert last_hop("Mira Solt", hops) == "pleurisy"


def test_three_hops_are_followed_to_the_end() -> None:
    hops = [*CHAIN[:1], Hop("q2", ("q1",), None, "Kell"), Hop("q3", ("q2",), None, "1877")]
    asked = when("In what year was the son of Tom Arlen's wife born?")
    assert last_hop("Mira Solt", hops, asks_when=asked) == "1877"
    assert last_hop("Mira Solt", hops) is None  # a year, and the question does not ask when


def test_a_date_at_the_end_of_the_chain_answers_only_a_question_about_when() -> None:
    """ "What league, founded in 1992, started its 2013 season on which day?" asks for a date;
    "Which league started its season on 17 August 2013?" planned as "league ..." then
    "start date of #1" asks for the league: the date only checked it."""
    hops = [Hop("q1", (), None, "Premier League"), Hop("q2", ("q1",), None, "17 August 2013")]
    which = when("Which league started on 17 August 2013?")
    assert last_hop("Premier League", hops, asks_when=which) is None
    asked = when("When did the league of Tom Arlen start?")
    assert last_hop("Premier League", hops, asks_when=asked) == "17 August 2013"


# --- chain_end: a resolved chain's answer -------------------------------------------------


def test_a_resolved_chain_ends_at_its_last_hops_finding() -> None:
    assert chain_end(CHAIN, asks_when=when("Why did the wife of Tom Arlen die?")) == "tuberculosis"
    three = [*CHAIN, Hop("q3", ("q2",), None, "lungs")]
    assert chain_end(three) == "lungs"


def test_a_chain_with_an_open_link_or_a_stray_query_does_not_resolve() -> None:
    assert chain_end([CHAIN[0], Hop("q2", ("q1",), None, None)]) is None
    assert chain_end([Hop("q1", (), None, None), CHAIN[1]]) is None
    stray = [*CHAIN, Hop("q3", (), None, None)]  # a stray planned query: not a link
    assert chain_end(stray) == "tuberculosis"
    independent = [Hop("q1", (), None, "1913"), Hop("q2", (), None, "1983")]
    assert chain_end(independent) is None  # a comparison is not a chain
    two_ends = [*CHAIN, Hop("q3", ("q1",), None, "1923")]
    assert chain_end(two_ends) is None


def test_a_follow_up_that_answered_a_link_completes_the_chain() -> None:
    hops = [CHAIN[0], Hop("q2", ("q1",), None, None), Hop("q3", (), "q2", "pleurisy")]
    assert chain_end(hops) == "pleurisy"


def test_a_date_ends_a_chain_only_when_the_question_asks_when() -> None:
    dated = [CHAIN[0], Hop("q2", ("q1",), None, "12 March 1923")]
    asked = when("When did the wife of Tom Arlen die?")
    assert chain_end(dated, asks_when=asked) == "12 March 1923"
    which = when("Which league did the wife of Tom Arlen start?")
    assert chain_end(dated, asks_when=which) is None
