"""The lexical citation check: no LLM, so every case asserts the exact repaired text."""

from __future__ import annotations

import pytest

from agent.checks.citations import (
    SourceText,
    check_citations,
    cite_each_side,
    ground_short_answer,
    sides,
)
from agent.rules.question import Question

QUESTION = "Which band was formed first, Tinted Windows or Hanson?"
SOURCES = [
    SourceText(
        1,
        "Tinted Windows",
        "Tinted Windows is an American rock supergroup formed in 2008 by James Iha, Taylor "
        "Hanson and Bun E. Carlos. They played their first show at Cain's Ballroom in Tulsa, "
        "Oklahoma on March 18, 2009.",
    ),
    SourceText(
        2,
        "Corrosion of Conformity",
        "Corrosion of Conformity is an American heavy metal band from Raleigh. Their eighth "
        "album was released on February 28, 2012 by Candlelight Records.",
    ),
    SourceText(
        3,
        "Hanson (band)",
        "Hanson is an American pop rock band from Tulsa, Oklahoma, formed in 1992 by the "
        "brothers Isaac, Taylor and Zac Hanson.",
    ),
]


def test_a_supported_sentence_is_kept_as_written() -> None:
    text = "Tinted Windows played their first show at Cain's Ballroom in Tulsa [1]."
    check = check_citations(text, SOURCES, QUESTION)
    assert check.answer == text
    assert check.cited == [1]
    assert (check.sentences, check.kept, check.recited, check.dropped) == (1, 1, 0, 0)


def test_a_date_glued_from_another_bands_passage_is_dropped() -> None:
    # [2] holds the date but not "Tinted Windows"; [1] holds the name but not the date.
    text = "Tinted Windows released their debut album on February 28, 2012 [1][2]."
    check = check_citations(text, SOURCES, QUESTION)
    assert check.answer == ""
    assert check.cited == []
    assert check.dropped_sentences == [text]
    assert check.to_json() == {
        "sentences": 1,
        "kept": 0,
        "recited": 0,
        "dropped": 1,
        "dropped_sentences": [text],
    }


def test_a_month_and_day_from_the_wrong_passage_are_not_anchored() -> None:
    text = "Corrosion of Conformity released an album on March 18, 2009 [1][2]."
    assert check_citations(text, SOURCES).answer == ""


def test_a_sentence_citing_the_wrong_passage_is_recited() -> None:
    check = check_citations(
        "The band played its first show at Cain's Ballroom in Tulsa [2].", SOURCES, QUESTION
    )
    assert check.answer == "The band played its first show at Cain's Ballroom in Tulsa [1]."
    assert (check.kept, check.recited, check.dropped) == (0, 1, 0)


def test_a_sentence_without_marks_is_recited() -> None:
    check = check_citations("Hanson was formed in 1992 in Tulsa.", SOURCES, QUESTION)
    assert check.answer == "Hanson was formed in 1992 in Tulsa [3]."
    assert check.cited == [3]
    assert check.recited == 1


def test_recitation_uses_two_passages_when_one_is_not_enough() -> None:
    check = check_citations("Hanson was formed in 1992 and Tinted Windows in 2008 [3].", SOURCES)
    assert check.answer == "Hanson was formed in 1992 and Tinted Windows in 2008 [1][3]."
    assert check.recited == 1


def test_an_out_of_range_mark_is_removed() -> None:
    check = check_citations("Tinted Windows was formed in 2008 [1][9].", SOURCES, QUESTION)
    assert check.answer == "Tinted Windows was formed in 2008 [1]."
    assert check.cited == [1]
    assert check.kept == 1


def test_a_spurious_extra_mark_is_removed() -> None:
    check = check_citations("Hanson was formed in 1992 [2][3].", SOURCES, QUESTION)
    assert check.answer == "Hanson was formed in 1992 [3]."
    assert check.cited == [3]
    assert (check.kept, check.recited) == (1, 0)


def test_marks_inside_the_sentence_and_list_marks_move_to_the_end() -> None:
    check = check_citations("Hanson [3] was formed in Tulsa in 1992 [1, 3].", SOURCES)
    assert check.answer == "Hanson was formed in Tulsa in 1992 [1][3]."
    assert check.kept == 1


def test_every_sentence_dropped_leaves_an_empty_answer() -> None:
    check = check_citations(
        "Tinted Windows released an album in 2012 [1]. Hanson split up in 1985 [3].", SOURCES
    )
    assert check.answer == ""
    assert check.dropped == 2
    assert check.sentences == 2
    assert check.dropped_sentences == [
        "Tinted Windows released an album in 2012 [1].",
        "Hanson split up in 1985 [3].",
    ]


def test_mixed_sentences_keep_recite_and_drop() -> None:
    text = (
        "Tinted Windows was formed in 2008 [1]. Hanson is from Tulsa [2]. "
        "Hanson won a Grammy in 1998 [3]."
    )
    check = check_citations(text, SOURCES, QUESTION)
    assert check.answer == "Tinted Windows was formed in 2008 [1]. Hanson is from Tulsa [3]."
    assert check.cited == [1, 3]
    assert (check.sentences, check.kept, check.recited, check.dropped) == (3, 1, 1, 1)
    assert check.dropped_sentences == ["Hanson won a Grammy in 1998 [3]."]


def test_abbreviations_and_initials_do_not_end_a_sentence() -> None:
    text = "The U.S. supergroup Tinted Windows included Bun E. Carlos and James Iha [1]."
    check = check_citations(text, SOURCES)
    assert check.sentences == 1
    assert check.answer == text


def test_a_title_abbreviation_does_not_end_a_sentence() -> None:
    sources = [SourceText(1, "Gateway Arch", "The Gateway Arch in St. Louis opened in 1967.")]
    check = check_citations("The Gateway Arch in St. Louis opened in 1967 [1].", sources)
    assert check.sentences == 1
    assert check.kept == 1


def test_marks_after_the_period_belong_to_the_sentence_before() -> None:
    check = check_citations(
        "Hanson was formed in 1992. [3] It is not known when it split.", SOURCES
    )
    assert check.answer == "Hanson was formed in 1992 [3]. It is not known when it split."
    assert (check.sentences, check.kept, check.recited) == (2, 2, 0)


def test_marks_before_the_period_stay_with_their_sentence() -> None:
    check = check_citations("Hanson was formed in 1992 [3]. It is not known when.", SOURCES)
    assert check.answer == "Hanson was formed in 1992 [3]. It is not known when."
    assert check.kept == 2


def test_a_sentence_without_checkable_terms_keeps_its_valid_marks() -> None:
    check = check_citations("It is not known [2][7].", SOURCES)
    assert check.answer == "It is not known [2]."
    assert check.cited == [2]
    assert check.kept == 1


def test_a_sentence_restating_the_question_is_kept_unchecked() -> None:
    # "Tinted Windows" comes only from the question; nothing else can be checked.
    check = check_citations("Tinted Windows was formed first [2].", SOURCES, QUESTION)
    assert check.answer == "Tinted Windows was formed first [2]."
    assert check.kept == 1
    # Without the question the same name must be backed by the cited passage.
    assert check_citations("Tinted Windows was formed first [2].", SOURCES).answer == (
        "Tinted Windows was formed first [1]."
    )


def test_a_common_word_opening_the_sentence_is_not_a_name() -> None:
    # "Formed" is capitalised only because it starts the sentence; the passages use "formed".
    check = check_citations("Formed in 2008, Tinted Windows played in Tulsa [1].", SOURCES)
    assert check.answer == "Formed in 2008, Tinted Windows played in Tulsa [1]."
    assert check.kept == 1


def test_a_name_opening_the_sentence_is_still_checked() -> None:
    # "Hanson" is a name even as the first word: a passage about another band does not back it.
    sources = [SourceText(1, "Tinted Windows", "Tinted Windows was formed in 2008.")]
    check = check_citations("Hanson was formed in 2008 [1].", sources)
    assert check.answer == ""
    assert check.dropped == 1


def test_accents_case_and_possessives_are_ignored_when_matching() -> None:
    sources = [SourceText(1, "Beyoncé", "Beyoncé performed at the Cains Ballroom in 2001.")]
    check = check_citations("BEYONCE played at Cain's Ballroom in 2001 [1].", sources)
    assert check.answer == "BEYONCE played at Cain's Ballroom in 2001 [1]."
    assert check.kept == 1


def test_thousands_separators_do_not_matter() -> None:
    sources = [SourceText(1, "Tulsa Arena", "The Tulsa Arena seats 1117 people.")]
    check = check_citations("The Tulsa Arena seats 1,117 people [1].", sources)
    assert check.kept == 1
    assert check_citations("The Tulsa Arena seats 1,118 people [1].", sources).answer == ""


def test_ground_short_answer_found_verbatim_after_normalisation() -> None:
    assert ground_short_answer("Tulsa Oklahoma", SOURCES) == ("Tulsa Oklahoma", True)
    assert ground_short_answer("the Candlelight Records", SOURCES) == (
        "the Candlelight Records",
        True,
    )


def test_ground_short_answer_snaps_to_the_passage_wording() -> None:
    assert ground_short_answer("Cain Ballroom", SOURCES) == ("Cain's Ballroom", True)
    assert ground_short_answer("Cains Ballroom", SOURCES) == ("Cain's Ballroom", True)
    assert ground_short_answer("Bun Carlos", SOURCES) == ("Bun E. Carlos", True)


def test_ground_short_answer_not_in_the_passages() -> None:
    assert ground_short_answer("Paris", SOURCES) == ("Paris", False)
    assert ground_short_answer("Madison Square Garden", SOURCES) == (
        "Madison Square Garden",
        False,
    )
    assert ground_short_answer("unknown", SOURCES) == ("unknown", False)


@pytest.mark.parametrize("reply", ["yes", "No", "Yes."])
def test_ground_short_answer_yes_no_is_always_grounded(reply: str) -> None:
    assert ground_short_answer(reply, SOURCES) == (reply, True)


def test_ground_short_answer_empty() -> None:
    assert ground_short_answer("  ", SOURCES) == ("", False)


# --- a comparison cites each side (issue 65 item 6) ---------------------------------------

CHOICE = Question.read(QUESTION)  # "Which band was formed first, Tinted Windows or Hanson?"


def test_a_choice_cites_the_other_alternatives_dated_sentence() -> None:
    answer = "Hanson was formed in 1992 [3]."
    assert cite_each_side(answer, SOURCES, CHOICE) == (
        "Hanson was formed in 1992 [3]. Tinted Windows is an American rock supergroup formed in "
        "2008 by James Iha, Taylor Hanson and Bun E. Carlos [1]."
    )


def test_a_choice_citing_both_sides_is_left_alone() -> None:
    answer = "Hanson was formed in 1992 [3], Tinted Windows in 2008 [1]."
    assert cite_each_side(answer, SOURCES, CHOICE) == answer


def test_a_side_no_passage_names_is_not_invented() -> None:
    answer = "Hanson was formed in 1992 [3]."
    assert cite_each_side(answer, SOURCES[1:], CHOICE) == answer


def test_a_side_is_read_from_the_passage_titled_by_it() -> None:
    """Passage 1 names "Hanson" only in passing (Taylor Hanson): the side "Hanson" is read from
    the passage titled by it, and an answer citing passage 2 gets both sides."""
    answer = "Tinted Windows was formed in 2008 [1]."
    assert cite_each_side(answer, SOURCES, CHOICE) == (
        "Tinted Windows was formed in 2008 [1]. Hanson is an American pop rock band from Tulsa, "
        "Oklahoma, formed in 1992 by the brothers Isaac, Taylor and Zac Hanson [3]."
    )
    answer = "Tinted Windows was formed in 2008 [2]."
    assert cite_each_side(answer, SOURCES, CHOICE) == (
        "Tinted Windows was formed in 2008 [2]. Tinted Windows is an American rock supergroup "
        "formed in 2008 by James Iha, Taylor Hanson and Bun E. Carlos [1]. Hanson is an "
        "American pop rock band from Tulsa, Oklahoma, formed in 1992 by the brothers Isaac, "
        "Taylor and Zac Hanson [3]."
    )


def test_without_titles_a_side_is_read_from_a_passage_naming_it() -> None:
    untitled = [SourceText(s.n, f"page {s.n}", s.text) for s in SOURCES]
    answer = "Hanson was formed in 1992 [3]."
    # passage 3 names Hanson; Tinted Windows is named by passage 1 only
    assert cite_each_side(answer, untitled, CHOICE) == (
        "Hanson was formed in 1992 [3]. Tinted Windows is an American rock supergroup formed in "
        "2008 by James Iha, Taylor Hanson and Bun E. Carlos [1]."
    )


def test_a_bare_yes_cites_each_subject_the_question_names() -> None:
    """The free reader's "Yes" cites nothing; the subjects of a yes/no question are the shown
    passages' titles it names, without their parenthetical ("Hanson (band)")."""
    both = Question.read("Are Tinted Windows and Hanson both American bands?")
    assert sides(both, SOURCES) == ["Tinted Windows", "Hanson"]
    assert cite_each_side("Yes.", SOURCES, both) == (
        "Yes. Tinted Windows is an American rock supergroup formed in 2008 by James Iha, Taylor "
        "Hanson and Bun E. Carlos [1]. Hanson is an American pop rock band from Tulsa, Oklahoma, "
        "formed in 1992 by the brothers Isaac, Taylor and Zac Hanson [3]."
    )


@pytest.mark.parametrize(
    "question",
    [
        "Which band did Taylor Hanson form in 2008?",  # neither a choice nor yes/no
        "Which band was formed first?",  # no alternatives offered
    ],
)
def test_other_questions_have_no_sides(question: str) -> None:
    answer = "Tinted Windows [1]."
    assert sides(Question.read(question), SOURCES) == []
    assert cite_each_side(answer, SOURCES, Question.read(question)) == answer


def test_an_empty_answer_gets_no_evidence_alone() -> None:
    assert cite_each_side("", SOURCES, CHOICE) == ""
