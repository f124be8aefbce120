"""The planner's query text rules (``agent.planner.queries``): which planned queries are kept,
how a copied pattern is repaired, how repeated text becomes a ``#n`` reference and what a
finding fills into it. No graph, no model."""

from __future__ import annotations

from agent.rules.question import Question
from tests.planner_scripts import (
    QUESTION,
)


def test_planned_queries_off_the_question_are_dropped_and_placeholders_filled() -> None:
    from agent.planner.queries import on_topic
    from agent.planner.state import query_key

    def plan(*queries: str) -> list[tuple[str, str]]:
        return [(q, query_key(q)) for q in queries]

    question = "Who was born first, Ada Lovelace or Alan Turing?"
    kept = on_topic(plan("birth date of Y", "birth date of Z"), Question.read(question))
    assert [q for q, _ in kept] == ["birth date of Ada Lovelace", "birth date of Alan Turing"]
    question = "Which river flows through the city where the Eiffel Tower stands?"
    kept = on_topic(
        plan("director of X", "country of #1", "city of the Eiffel Tower", "river of #3"),
        Question.read(question),
    )
    # the copied pattern and the query built on it go; the kept reference is renumbered
    assert [q for q, _ in kept] == ["city of the Eiffel Tower", "river of #1"]


def test_a_planned_query_naming_an_example_name_is_dropped() -> None:
    """The 1.5B planner copied a made-up name of its examples into a real plan (MuSiQue
    tuning: "county where the composer of Silver Tide ..."); such a query, and any query
    built on it, is not searched, while the same word named by the question stays."""
    from agent.planner.examples import example_names
    from agent.planner.queries import on_topic
    from agent.planner.state import query_key

    assert {"Silver", "Tides", "Elvard"} <= example_names()
    question = "Which county borders the capital of the state where Johnson Hagood was born?"
    plan = ["state where Johnson Hagood was born", "county where the composer of Silver Tide "
            "was born", "capital of #1", "county that borders #3"]  # fmt: skip
    kept = on_topic([(q, query_key(q)) for q in plan], Question.read(question))
    assert [q for q, _ in kept] == [
        "state where Johnson Hagood was born",
        "capital of #1",
        "county that borders #2",
    ]
    question = "Who directed the film Silver Tides of Harbrook?"
    query = "director of Silver Tides of Harbrook"
    kept = on_topic([(query, query_key(query))], Question.read(question))
    assert [q for q, _ in kept] == ["director of Silver Tides of Harbrook"]


def test_a_hop_that_asks_when_for_a_question_that_asks_where_asks_for_the_place() -> None:
    """The prompt's "birth year of #1", copied into questions about a place (2Wiki, v3)."""
    from agent.planner.queries import on_topic
    from agent.planner.state import query_key

    def plan(*queries: str) -> list[str]:
        pairs = [(q, query_key(q)) for q in queries]
        return [q for q, _ in on_topic(pairs, Question.read(question))]

    question = "Where was the director of film Harbour Lights born?"
    assert plan("director of film Harbour Lights", "birth date of #1") == [
        "director of film Harbour Lights",
        "birth place of #1",
    ]
    question = "What is the place of death of the director of film Harbour Lights?"
    assert plan("director of film Harbour Lights", "death year of #1")[1] == "death place of #1"
    # a question that asks when, or says "where" in a clause, keeps its dates
    question = "When was the director of film Harbour Lights born?"
    assert plan("director of film Harbour Lights", "birth date of #1")[1] == "birth date of #1"
    question = "In what year was the club founded in the town where Harbour Lights was shot?"
    assert plan("town where Harbour Lights was shot", "founding year of club in #1")[1] == (
        "founding year of club in #1"
    )


def test_a_query_that_repeats_an_earlier_one_builds_on_its_answer() -> None:
    from agent.planner.queries import implicit_refs

    earlier = ["origin of the song Alone", "town where 'Coffee Alone' comes from"]
    query = 'river next to the town where "Coffee Alone" comes from'
    assert implicit_refs(query, earlier) == "river next to the #2"
    # a query that is only the earlier one, or shorter than three words, is left alone
    assert implicit_refs("town where Coffee Alone comes from", earlier[1:]) == (
        "town where Coffee Alone comes from"
    )
    assert implicit_refs("birth date of Ada", ["of Ada"]) == "birth date of Ada"


def test_a_bare_noun_is_no_query() -> None:
    from agent.planner.queries import clean_queries, generic, on_topic

    assert generic("city") and generic("the capitol")
    assert not generic("Paris") and not generic("capital of France") and not generic("1937")
    question = "In which county is the city sharing a border with the capital of Arlen?"
    planned = ["city", "capital of Arlen", "county of #2"]
    kept = on_topic(clean_queries(planned, set(), 6), Question.read(question))
    assert [q for q, _ in kept] == ["capital of Arlen", "county of #1"]


def test_a_query_names_something_by_a_name_number_quote_or_reference() -> None:
    from agent.planner.queries import names_nothing

    question = 'Which river flows next to the German town where "Coffee Alone" originates from?'
    for fragment in ("originates from", "river that flows next to", "year of the player's award"):
        assert names_nothing(fragment, question)
    for named in ("German town", "river next to #2", "'Coffee Alone' origin", "town in 1921"):
        assert not names_nothing(named, question)
    # a question in lower case gives nothing to judge by
    assert not names_nothing("group of scientists", "who discovered nuclear fission first?")


def test_a_hop_whose_relation_the_question_never_asks_is_dropped() -> None:
    from agent.planner.queries import clean_queries, on_topic, relation_in_question

    question = "In which country is the province where Serbian is official?"
    planned = ["province where Serbian is official", "country of #1", "capital of #2"]
    kept = on_topic(clean_queries(planned, set(), 6), Question.read(question))
    assert [q for q, _ in kept] == ["province where Serbian is official", "country of #1"]
    assert relation_in_question("place of birth of #1", "Where was the wife of Tom Arlen born?")
    assert relation_in_question("date of death of #1", "When did the father of Ann Lee die?")
    assert relation_in_question("spouse of #1", "Who married the narrator of Harbour Lights?")


def test_a_bare_name_in_the_plan_goes_into_the_hops_that_build_on_it() -> None:
    from agent.planner.queries import clean_queries, inline_bare_names

    question = "When did Frances Varn, Marchioness Of Kessel's father die?"
    planned = ["frances varn, marchioness of kessel", "father of #1", "date of death of #2"]
    assert [q for q, _ in inline_bare_names(clean_queries(planned, set(), 6), question)] == [
        "father of Frances Varn, Marchioness Of Kessel",
        "date of death of #1",
    ]
    # a description is not a bare name, and a name nothing builds on is left alone
    chain = ["city where the Eiffel Tower stands", "river that flows through #1"]
    pairs = clean_queries(chain, set(), 6)
    assert inline_bare_names(pairs, QUESTION) == pairs
    alone = clean_queries(["Robocalypse", "director of Robocalypse"], set(), 6)
    assert inline_bare_names(alone, "Who directed Robocalypse?") == alone


def test_what_a_finding_fills_into_the_hop_that_needs_it() -> None:
    from agent.planner.queries import fill_value

    # a name with its titles goes in whole; a trailing aside (dates, places) does not
    long_name = "Louis Philippe Marie Alexandre Varn, 3rd Prince of Kessel"
    assert fill_value(long_name) == long_name
    assert fill_value("Jorgen Smit (July 21, 1916 in Bergen – May 10, 1991)") == "Jorgen Smit"
    # a yes/no or a sentence is not a name to search by
    assert fill_value("yes") == ""
    assert fill_value("he was the son of a farmer who moved to the city of Bergen in 1901") == ""
