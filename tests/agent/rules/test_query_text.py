"""The rules that read a planned query's words (``agent.rules.query_text``): its key, whether
it names something, asks a relation the question asks, repeats an earlier query, what a finding
fills into its ``#n``, and the residual hop a recorded plan leaves. No graph, no model."""

from __future__ import annotations

from agent.rules.query_text import (
    fill_value,
    generic,
    implicit_refs,
    names_nothing,
    query_key,
    relation_in_question,
    residual_query,
    similar_queries,
)

ATLAS_QUESTION = "Where did the author of The Lantern Atlas think Venus was in relation to the sun?"


def test_a_query_key_ignores_case_punctuation_filler_and_order() -> None:
    assert query_key("The birth date of Ada?") == query_key("ada, birth date")
    assert similar_queries("birth date of Ada Lovelace", "Ada Lovelace birth date")
    assert not similar_queries("birth date of Ada Lovelace", "death place of Alan Turing")


def test_a_bare_noun_is_no_query() -> None:
    assert generic("city") and generic("the capitol")
    assert not generic("Paris") and not generic("capital of France") and not generic("1937")


def test_a_hop_asks_a_relation_the_question_words_otherwise() -> None:
    assert relation_in_question("place of birth of #1", "Where was the wife of Tom Arlen born?")
    assert relation_in_question("date of death of #1", "When did the father of Ann Lee die?")
    assert relation_in_question("spouse of #1", "Who married the narrator of Harbour Lights?")
    assert not relation_in_question("capital of #2", "In which country is the province?")


def test_a_query_that_repeats_an_earlier_one_builds_on_its_answer() -> None:
    earlier = ["origin of the song Alone", "town where 'Coffee Alone' comes from"]
    query = 'river next to the town where "Coffee Alone" comes from'
    assert implicit_refs(query, earlier) == "river next to the #2"
    # a query that is only the earlier one, or shorter than three words, is left alone
    assert implicit_refs("town where Coffee Alone comes from", earlier[1:]) == (
        "town where Coffee Alone comes from"
    )
    assert implicit_refs("birth date of Ada", ["of Ada"]) == "birth date of Ada"


def test_a_query_names_something_by_a_name_number_quote_or_reference() -> None:
    question = 'Which river flows next to the German town where "Coffee Alone" originates from?'
    for fragment in ("originates from", "river that flows next to", "year of the player's award"):
        assert names_nothing(fragment, question)
    for named in ("German town", "river next to #2", "'Coffee Alone' origin", "town in 1921"):
        assert not names_nothing(named, question)
    # a question in lower case gives nothing to judge by
    assert not names_nothing("group of scientists", "who discovered nuclear fission first?")


def test_what_a_finding_fills_into_the_hop_that_needs_it() -> None:
    # a name with its titles goes in whole; a trailing aside (dates, places) does not
    long_name = "Louis Philippe Marie Alexandre Varn, 3rd Prince of Kessel"
    assert fill_value(long_name) == long_name
    assert fill_value("Jorgen Smit (July 21, 1916 in Bergen – May 10, 1991)") == "Jorgen Smit"
    # a yes/no or a sentence is not a name to search by
    assert fill_value("yes") == ""
    assert fill_value("he was the son of a farmer who moved to the city of Bergen in 1901") == ""


def test_a_recorded_plan_is_judged_by_its_recorded_links() -> None:
    # a recorded hop's #1 was filled with the answer, so only its recorded link says it builds
    # on the bridge
    queries = ["author of The Lantern Atlas", "where Ilse Varnow put Venus"]
    assert residual_query(queries, [set(), {0}], ATLAS_QUESTION) is None
    assert residual_query(queries, [set(), set()], ATLAS_QUESTION) == (
        0,
        "Where did the #1 think Venus was in relation to the sun?",
    )
