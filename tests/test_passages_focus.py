"""Trimming a passage for a prompt keeps the sentence that bears on the query."""

from __future__ import annotations

from searchers.passages import focus_text

BAND = (
    "Tinted Windows is an American rock supergroup formed by guitarist James Iha, previously "
    "of The Smashing Pumpkins, singer Taylor Hanson of Hanson, bassist Adam Schlesinger of "
    "Fountains of Wayne and Ivy, and Bun E. Carlos of Cheap Trick.  Josh Lattanzi also often "
    "performs with the band as the second guitarist.  This new project will run alongside all "
    "the artists' main bands.  The first performance by the band was on March 18, 2009 at "
    "Cain's Ballroom in Tulsa, Oklahoma in a small show at the side-stage.  Tickets sold out "
    "quickly and people flew from all over the world to see the debut."
)


def test_a_prefix_would_cut_the_answer_off_but_the_focus_keeps_it() -> None:
    assert "Tulsa" not in focus_text(BAND, 350)  # the plain prefix loses it
    focused = focus_text(BAND, 350, "first performance of the band Tinted Windows")
    assert "Cain's Ballroom in Tulsa" in focused
    assert len(focused) <= 350 + 10
    assert focused.startswith("... ") and " ... " in focused  # the gaps are marked
    # with room, the opening sentence comes along, whole: an initial is not a sentence end
    roomy = focus_text(BAND, 420, "first performance of the band Tinted Windows")
    assert roomy.startswith("Tinted Windows is an American rock supergroup")
    assert "Bun E. Carlos of Cheap Trick." in roomy and "Tulsa" in roomy


def test_short_texts_and_queries_without_shared_words_are_left_alone() -> None:
    assert focus_text("Short text.", 350, "anything") == "Short text."
    assert focus_text(BAND, 120, "zebra") == focus_text(BAND, 120)
    assert focus_text(BAND, 120).endswith(" ...") and len(focus_text(BAND, 120)) <= 124


def test_one_long_sentence_is_cut_as_a_prefix() -> None:
    text = "word " * 200 + "end."
    assert len(focus_text(text, 100, "word end")) <= 104
