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


PERSON = (
    "Ola Varn Kessel (7 October 1877 - 11 December 1950) was a Norwegian mathematician and "
    "educator. He was born in Flora. He was married to Anna Skeie, and the father of Sigmund, "
    "Arne, Henrik and Atle Kessel. His thesis from 1925 treated the theory of algebraic "
    "equations. Three of his sons became professors of mathematics, and one of engineering."
)


def test_the_subjects_own_name_does_not_pick_the_sentence() -> None:
    """Every sentence of a passage is about its title: the query's other words choose, in the
    words a sentence says them with ("birth" -> "born")."""
    query = "place of birth of Ola Varn Kessel"
    assert "born in Flora" in focus_text(PERSON, 130, query, "Ola Varn Kessel")
    spouse = focus_text(PERSON, 200, "spouse of Ola Varn Kessel", "Ola Varn Kessel")
    assert "married to Anna Skeie" in spouse


def test_room_left_is_filled_with_the_other_sentences_in_order() -> None:
    focused = focus_text(PERSON, 330, "thesis of Ola Varn Kessel", "Ola Varn Kessel")
    assert "theory of algebraic equations" in focused and "born in Flora" in focused
    assert len(focused) <= 330 + 10


def test_an_opening_with_life_dates_answers_a_date_of_death() -> None:
    text = (
        "Tomas Valentin Arle (January 16, 1835 - December 19, 1909), also known as Tom Arle, was "
        "a politician from Varnland who served as a member of the Kessel House of Delegates for "
        "Amber County for the 1870 and 1872 terms and later as its speaker. Arle served as a "
        "member of the Kessel Senate for district 5 from 1873 to 1874. He was reelected to the "
        "House in 1901 and served until his death in 1909."
    )
    focused = focus_text(text, 300, "date of death of Tomas Valentin Arle", "Tomas Valentin Arle")
    assert "December 19, 1909" in focused


def test_an_untitled_passage_is_ranked_as_before() -> None:
    """One-call RAG and the answer step pass no title: the window of the first ranking (shared
    words only, nothing filled in), so their measured rows stay comparable."""
    query = "place of birth of Ola Varn Kessel"
    opening = (
        "Ola Varn Kessel (7 October 1877 - 11 December 1950) was a Norwegian mathematician and "
        "educator."
    )
    assert focus_text(PERSON, 130, query) == opening + " ..."
    assert focus_text(PERSON, 130, query, "Ola Varn Kessel") == (
        opening + " He was born in Flora. ..."
    )
