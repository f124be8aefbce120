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
    from agent.rules.query_text import query_key

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
    from agent.rules.query_text import query_key

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
    from agent.rules.query_text import query_key

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


def test_a_bare_noun_is_no_query() -> None:
    from agent.planner.queries import clean_queries, on_topic

    question = "In which county is the city sharing a border with the capital of Arlen?"
    planned = ["city", "capital of Arlen", "county of #2"]
    kept = on_topic(clean_queries(planned, set(), 6), Question.read(question))
    assert [q for q, _ in kept] == ["capital of Arlen", "county of #1"]


def test_a_hop_whose_relation_the_question_never_asks_is_dropped() -> None:
    from agent.planner.queries import clean_queries, on_topic

    question = "In which country is the province where Serbian is official?"
    planned = ["province where Serbian is official", "country of #1", "capital of #2"]
    kept = on_topic(clean_queries(planned, set(), 6), Question.read(question))
    assert [q for q, _ in kept] == ["province where Serbian is official", "country of #1"]


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
