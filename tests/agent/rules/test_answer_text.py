"""An answer's words against other text (``agent.rules.answer_text``): no answer, a restated
query, the alternative it names, and the passage window that words an answer best."""

from __future__ import annotations

from agent.rules.answer_text import closest_window, pick_choice, restates, unknown_like
from agent.rules.question import Question

OFFERED = Question.read("Which band was formed first, Tinted Windows or Hanson?").choices


def test_an_answer_of_the_query_s_own_words_restates_it_unless_offered() -> None:
    assert restates("Tinted Windows", "first performance of Tinted Windows")
    assert not restates("Tulsa", "first performance of Tinted Windows")
    assert not restates("Hanson", "Who formed first, Tinted Windows or Hanson?")
    assert restates("Hanson", "Who formed first, Tinted Windows or Hanson?", offered=())


def test_the_closest_window_words_the_answer_as_the_passage_does() -> None:
    parts = ["Cain's Ballroom", "They played their first show at Cain's Ballroom in Tulsa."]
    assert closest_window("Cain Ballroom", parts) == (1.0, "Cain's Ballroom")
    assert closest_window("Paris", parts) == (0.0, "")


def test_unknown_like_drafts() -> None:
    assert unknown_like("")
    assert unknown_like("Unknown")
    assert unknown_like("The city is not stated in the passages")
    assert not unknown_like("Tulsa")


def test_pick_choice_maps_the_short_answer_to_the_question_wording() -> None:
    assert pick_choice("hanson", "", OFFERED) == "Hanson"
    assert pick_choice("the band Tinted Windows", "", OFFERED) == "Tinted Windows"


def test_pick_choice_resolves_a_category_answer_through_the_long_answer() -> None:
    long = "Hanson was formed in 1992 in Tulsa [3]."
    assert pick_choice("the American pop rock band", long, OFFERED) == "Hanson"


def test_pick_choice_leaves_the_short_answer_when_unsure() -> None:
    long = "Hanson was formed in 1992 [3] and Tinted Windows in 2008 [1]."
    assert pick_choice("the older band", long, OFFERED) == "the older band"
    both = Question.read("Are Hanson and Tinted Windows American?")
    assert both.choices == ()
    assert pick_choice("yes", "Both are American.", both.choices) == "yes"
