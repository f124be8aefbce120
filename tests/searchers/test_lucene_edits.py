"""LevelRAG's feedback operations (extend, emphasize, exclude) and deduplication keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchers.lucene import (
    MAX_CLAUSES,
    Clause,
    Group,
    LuceneQuery,
    Occur,
    Phrase,
    Term,
    emphasize,
    exclude,
    extend,
    is_empty,
    parse_lucene,
    query_key,
    render_query_string,
)
from searchers.lucene.model import MAX_BOOST
from searchers.passages import Passage
from searchers.sparse_tantivy import TantivySparseIndex


def q(text: str) -> LuceneQuery:
    parsed = parse_lucene(text)
    assert not parsed.repairs, parsed.repairs
    return parsed.query


def test_extend_adds_a_should_term_or_quoted_phrase() -> None:
    assert render_query_string(extend(q("solar"), "panels")) == "solar panels"
    assert render_query_string(extend(q("solar"), "roof panels")) == 'solar "roof panels"'
    assert render_query_string(extend(q("solar"), '"roof  panels"')) == 'solar "roof panels"'
    assert extend(q("solar"), "roof panels").clauses[-1] == Clause(Phrase("roof panels"))


def test_extend_is_a_no_op_when_already_wanted_or_unsearchable() -> None:
    query = q('+Solar "roof panels"')
    assert extend(query, "solar") is query
    assert extend(query, "ROOF   panels") is query
    assert extend(query, "&&") is query
    assert extend(query, "") is query


def test_extend_lifts_an_exclusion_of_the_same_keyword() -> None:
    assert render_query_string(extend(q("solar -eclipse"), "Eclipse")) == "solar Eclipse"


def test_emphasize_boosts_an_absent_keyword_by_factor() -> None:
    assert render_query_string(emphasize(q("solar"), "wind")) == "solar wind^2"
    assert render_query_string(emphasize(q("solar"), "wind farm", 3)) == 'solar "wind farm"^3'


def test_emphasize_multiplies_an_existing_boost() -> None:
    once = emphasize(q("solar wind"), "solar")
    assert render_query_string(once) == "solar^2 wind"
    twice = emphasize(once, "SOLAR")
    assert render_query_string(twice) == "solar^4 wind"
    assert render_query_string(emphasize(q("solar^1.5 wind"), "solar", 3)) == "solar^4.5 wind"


def test_emphasize_reaches_fielded_and_nested_occurrences() -> None:
    query = q('title:Solar (wind "solar")')
    assert render_query_string(emphasize(query, "solar")) == 'title:Solar^2 (wind "solar"^2)'


def test_emphasize_keeps_required_and_lifts_excluded() -> None:
    assert render_query_string(emphasize(q("+solar wind"), "solar")) == "+solar^2 wind"
    assert render_query_string(emphasize(q("wind -solar"), "solar")) == "wind solar^2"


def test_emphasize_caps_the_boost_and_rejects_bad_factors() -> None:
    query = q("solar")
    for _ in range(20):
        query = emphasize(query, "solar", 10)
    assert query.clauses[0].boost == MAX_BOOST
    with pytest.raises(ValueError):
        emphasize(query, "solar", 0)
    with pytest.raises(ValueError):
        emphasize(query, "solar", float("nan"))


def test_exclude_adds_must_not_and_drops_the_wanted_clause() -> None:
    assert render_query_string(exclude(q("solar"), "eclipse")) == "solar -eclipse"
    assert render_query_string(exclude(q("solar eclipse"), "Eclipse")) == "solar -Eclipse"
    assert exclude(q("solar"), "eclipse").clauses[-1] == Clause(Term("eclipse"), Occur.MUST_NOT)
    assert exclude(q("solar"), "lunar eclipse").clauses[-1] == Clause(
        Phrase("lunar eclipse"), Occur.MUST_NOT
    )


def test_exclude_is_idempotent_and_can_empty_the_query() -> None:
    once = exclude(q("solar"), "eclipse")
    assert exclude(once, "ECLIPSE") is once
    emptied = exclude(q("solar"), "solar")
    assert is_empty(emptied) and render_query_string(emptied) == ""


def test_edits_respect_the_clause_cap() -> None:
    full = LuceneQuery(tuple(Clause(Term(f"w{i}")) for i in range(MAX_CLAUSES)))
    assert extend(full, "more") is full
    assert emphasize(full, "more") is full
    assert exclude(full, "more") is full
    assert emphasize(full, "w3").clauses[3].boost == 2.0  # boosting adds no clause


def test_edits_never_mutate_their_input() -> None:
    query = q("solar wind")
    before = query_key(query)
    extend(query, "panels")
    emphasize(query, "solar")
    exclude(query, "wind")
    assert query_key(query) == before == "solar wind"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("solar wind", "wind solar"),
        ("Solar WIND", "solar wind"),
        ('"solar"', "solar"),
        ('"solar  panels"', '"Solar panels"'),
        ("solar^1", "solar"),
        ("+a -b c", "c -b +a"),
        ("(a)", "a"),
        ("title:(a b) c", "c title:(b a)"),
    ],
)
def test_query_key_equates_equivalent_queries(left: str, right: str) -> None:
    assert query_key(parse_lucene(left).query) == query_key(parse_lucene(right).query)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("solar", "+solar"),
        ("solar", "-solar"),
        ("solar", "solar^2"),
        ("solar", "title:solar"),
        ('"solar panels"', "solar panels"),
        ('"solar panels"', '"solar panels"~2'),
        ("(a b) c", "a (b c)"),
    ],
)
def test_query_key_separates_different_queries(left: str, right: str) -> None:
    assert query_key(parse_lucene(left).query) != query_key(parse_lucene(right).query)


def test_query_key_dedupes_refinement_paths() -> None:
    """The BFS reaches one query by different edit orders; the key lets it try it once."""
    base = q("nobel prize")
    paths = [
        exclude(extend(base, "physics"), "peace"),
        extend(exclude(base, "peace"), "Physics"),
        extend(extend(exclude(base, "peace"), "physics"), "physics"),
    ]
    assert len({query_key(path) for path in paths}) == 1
    assert query_key(emphasize(base, "nobel")) != query_key(base)


def test_group_of_one_clause_keys_like_the_clause() -> None:
    hand_built = LuceneQuery(
        (
            Clause(
                Group(LuceneQuery((Clause(Term("a"), boost=2.0),))),
            ),
        )
    )
    assert query_key(hand_built) == query_key(q("a^2"))


def test_edits_change_what_tantivy_returns(tmp_path: Path) -> None:
    index = TantivySparseIndex.create(tmp_path / "sparse")
    index.add(
        [
            Passage("peace", "Nobel Peace Prize", "The Nobel Peace Prize is awarded in Oslo."),
            Passage("physics", "Nobel Prize in Physics", "Awarded by the Swedish Academy."),
            Passage("curie", "Marie Curie", "Curie won the Nobel Prize twice."),
        ]
    )
    base = q("nobel prize")
    assert {h.id for h in index.retrieve_query(base)} == {"peace", "physics", "curie"}
    assert {h.id for h in index.retrieve_query(exclude(base, "oslo"))} == {"physics", "curie"}
    assert index.retrieve_query(emphasize(base, "curie", 5))[0].id == "curie"
    assert {h.id for h in index.retrieve_query(q("oslo"))} == {"peace"}
    assert {h.id for h in index.retrieve_query(extend(q("oslo"), "marie curie"))} == {
        "peace",
        "curie",
    }
    assert index.retrieve_query(exclude(q("oslo"), "oslo")) == []
