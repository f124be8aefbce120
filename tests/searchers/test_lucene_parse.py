"""The repairing parser and the two renderers, without an engine.

Parse results are compared through ``query_key`` (order-free, one canonical spelling) so each
expectation states the Lucene meaning, not incidental clause order. Renderer outputs are exact
strings: the Elasticsearch backend sends them verbatim.
"""

from __future__ import annotations

import random

import pytest

from searchers.lucene import (
    MAX_CLAUSES,
    Clause,
    Group,
    LuceneQuery,
    Occur,
    Phrase,
    Term,
    is_empty,
    parse_lucene,
    query_key,
    render_query_string,
    render_tantivy,
)
from searchers.lucene.model import MAX_DEPTH, count_clauses
from searchers.lucene.parse import MAX_NOTES

# (input, query_key of the result, substring of some repair note or None for "no repairs")
PARSES = [
    ("solar -eclipse", "-eclipse solar", None),
    ("a AND NOT b", "+a -b", None),
    ("a && b", "+a +b", None),
    ("a || b", "a b", None),
    ("!a b", "-a b", None),
    ("a OR b AND c", "+b +c a", None),
    ("title:Solar^2", "title:solar^2", None),
    ("TITLE:a", "title:a", None),
    ('"solar panels"~3^2', '"solar panels"~3^2', None),
    ('"Solar"', "solar", None),
    ("((a))^2", "a^2", None),
    ("(a^2)^3", "a^6", None),
    ("+(a)", "+a", None),
    ("a\\:b", "a\\:b", None),
    ("a - b", "a b", "lone '-'"),
    ('unbalanced "quote', "quote unbalanced", "unbalanced quote"),
    ('"one" "two', "one two", "unbalanced quote"),
    ("solar^", "solar", "boost needs a positive number"),
    ("solar^abc", "abc solar", "boost needs a positive number"),
    ("solar^0", "solar", "boost needs a positive number"),
    ("a^1e9", "a^1000", "clamped"),
    ("a^0.0000001", "a^0.001", "clamped"),
    ("^2 a", "a", "stray '^2'"),
    ("foo:bar", "foo\\:bar", "unknown field 'foo'"),
    ("sol*r?", "solr", "wildcard"),
    ("solar~", "solar", "fuzzy"),
    ("solar~0.8", "solar", "fuzzy"),
    ('"a b"~', '"a b"', "slop needs a non-negative number"),
    ('"a b"~100', '"a b"~50', "capped phrase slop"),
    ("(a b", "(a b)", "unbalanced '('"),
    ("a) b", "a b", "unbalanced ')'"),
    ("() a", "a", "empty parentheses"),
    ("(-a) b", "-a b", "moved them out"),
    ("title:(-a) b", "-title:a b", "moved them out"),
    ("-(-a) b", "b", "excludes nothing"),
    ("NOT", "", "dangling 'NOT'"),
    ("a AND", "a", "dangling 'AND'"),
    ("AND a", "a", "leading 'AND'"),
    ("a AND OR b", "+a +b", "misplaced 'OR'"),
    ("--a b", "-a b", "repeated operator"),
    ("title:text:a", "text:a", "overridden"),
    ("title:-a b", "-title:a b", "moved '-' before the field"),
    ("title:", "", "dangling 'title:'"),
    ("a\\", "a", "trailing backslash"),
    ("&&& ... a", "a", "nothing searchable"),
    ("-a", "-a", "only excluded clauses"),
    ("", "", "empty query"),
    ("   \t\n", "", "empty query"),
    ("x\ud800y", "x y", "surrogate"),
]


@pytest.mark.parametrize(("text", "key", "note"), PARSES)
def test_parse_repairs(text: str, key: str, note: str | None) -> None:
    parsed = parse_lucene(text)
    assert query_key(parsed.query) == key
    if note is None:
        assert parsed.repairs == []
    else:
        assert any(note in repair for repair in parsed.repairs), parsed.repairs


def test_clause_structure_of_a_typical_llm_query() -> None:
    parsed = parse_lucene('+"Marie Curie" title:nobel^2 -chemistry')
    assert parsed.query.clauses == (
        Clause(Phrase("Marie Curie"), Occur.MUST),
        Clause(Term("nobel"), Occur.SHOULD, "title", 2.0),
        Clause(Term("chemistry"), Occur.MUST_NOT),
    )


def test_fields_argument_decides_which_names_are_fields() -> None:
    assert parse_lucene("author:smith", fields=("author",)).query.clauses == (
        Clause(Term("smith"), field="author"),
    )
    default = parse_lucene("author:smith")
    assert default.query.clauses == (Clause(Term("author:smith")),)
    assert any("unknown field 'author'" in note for note in default.repairs)


def test_clause_cap_counts_nested_leaves() -> None:
    words = " ".join(f"w{i}" for i in range(100))
    parsed = parse_lucene(f"({words}) extra")
    assert count_clauses(parsed.query) == MAX_CLAUSES
    assert any("dropped 37 more" in note for note in parsed.repairs), parsed.repairs


def test_overlong_input_is_cut_and_noted() -> None:
    parsed = parse_lucene("a " * 20_000)
    assert any("cut the input" in note for note in parsed.repairs)
    assert count_clauses(parsed.query) == MAX_CLAUSES


def test_repair_notes_are_capped() -> None:
    parsed = parse_lucene(" ".join(f"f{i}:x" for i in range(50)))
    assert len(parsed.repairs) == MAX_NOTES
    assert parsed.repairs[-1].endswith("more repairs")


def _depth(query: LuceneQuery) -> int:
    nested = [_depth(c.node.query) for c in query.clauses if isinstance(c.node, Group)]
    return 1 + max(nested, default=0)


def test_deep_nesting_is_flattened_not_recursed() -> None:
    parsed = parse_lucene("(a " * 2000 + ")" * 2000)
    assert _depth(parsed.query) == MAX_DEPTH + 1  # the top level plus MAX_DEPTH groups
    assert count_clauses(parsed.query) == MAX_CLAUSES
    assert any("flattened" in note for note in parsed.repairs)
    assert parse_lucene("(" * 2000 + "a" + ")" * 2000).query == parse_lucene("a").query


# Exact query_string outputs: the ES backend sends these verbatim.
ES_STRINGS = [
    (parse_lucene("solar -eclipse").query, "solar -eclipse"),
    (parse_lucene('"solar panels"^3 wind').query, '"solar panels"^3 wind'),
    (parse_lucene("a AND NOT b").query, "+a -b"),
    (parse_lucene("title:(solar wind)^2").query, "title:(solar wind)^2"),
    (parse_lucene("mercury && !planet").query, "+mercury -planet"),
    (LuceneQuery((Clause(Term("C++")),)), "C\\+\\+"),
    (LuceneQuery((Clause(Term("a:b/c")),)), "a\\:b\\/c"),
    (LuceneQuery((Clause(Term("x&&y||z")),)), "x\\&\\&y\\|\\|z"),
    (LuceneQuery((Clause(Term("(x)=[y]{z}")),)), "\\(x\\)\\=\\[y\\]\\{z\\}"),
    (LuceneQuery((Clause(Term("^x~*?!\\")),)), "\\^x\\~\\*\\?\\!\\\\"),
    (LuceneQuery((Clause(Term("a<b>c"), Occur.MUST),)), "+(a b c)"),
    (LuceneQuery((Clause(Term("AND")),)), '"AND"'),
    (LuceneQuery((Clause(Phrase('say "hi" \\ now')),)), '"say \\"hi\\" \\\\ now"'),
    (LuceneQuery((Clause(Phrase("a b", 2), Occur.MUST, "text", 1.5),)), '+text:"a b"~2^1.5'),
    (
        LuceneQuery((Clause(Term("x"), boost=1.0), Clause(Term("y"), Occur.MUST_NOT, boost=3))),
        "x -y",
    ),
    (LuceneQuery((Clause(Term("x"), boost=1e-9), Clause(Term("y"), boost=1e9))), "x^0.001 y^1000"),
    (LuceneQuery((Clause(Term("&&")), Clause(Term("x")))), "x"),
    (parse_lucene("-a -b").query, ""),
]


@pytest.mark.parametrize(("query", "expected"), ES_STRINGS)
def test_query_string_rendering(query: LuceneQuery, expected: str) -> None:
    assert render_query_string(query) == expected


def _group(*clauses: Clause) -> Group:
    return Group(LuceneQuery(clauses))


def test_renderers_give_hand_built_negative_groups_lucenes_meaning() -> None:
    not_b = _group(Clause(Term("b"), Occur.MUST_NOT))
    optional = LuceneQuery((Clause(Term("a")), Clause(not_b)))  # a (-b): the group adds nothing
    required = LuceneQuery((Clause(Term("a")), Clause(not_b, Occur.MUST)))  # a +(-b): nothing
    assert render_query_string(optional) == "a"
    assert render_tantivy(optional) == '"a"'
    assert render_query_string(required) == render_tantivy(required) == ""
    assert is_empty(required) and not is_empty(optional)


TANTIVY_STRINGS = [
    ("solar -eclipse", '"solar" -"eclipse"'),
    ("a AND NOT b", '+"a" -"b"'),
    ("a && b || c", '+"a" +"b" "c"'),
    ('title:"solar panels"~2^3', 'title:"solar panels"~2^3'),
    ("+Jay-Z", '+("Jay" "Z")'),
    ('"say \\"hi\\""', '"say \\"hi\\""'),
    ("x" * 40 + " solar", '"solar"'),
    ("x" * 40 + " -solar", ""),
    ("é" * 19 + " -solar", '"' + "é" * 19 + '" -"solar"'),
    ("é" * 20 + " -solar", ""),
]


@pytest.mark.parametrize(("text", "expected"), TANTIVY_STRINGS)
def test_tantivy_rendering(text: str, expected: str) -> None:
    assert render_tantivy(parse_lucene(text).query) == expected


_ALPHABET = [
    *'+-!"()^~*?:/[]{}&|= \t',
    "AND",
    "OR",
    "NOT",
    "TO",
    "title:",
    "text:",
    "^2.5",
    "~3",
    "solar",
    "Eclipse",
    "C++",
    "東京",
    "Beyoncé",
]


def test_query_string_round_trips_through_the_parser() -> None:
    """What the ES renderer writes, the parser reads back as the same query: the rendering is
    valid classic Lucene with nothing lost or re-interpreted."""
    rng = random.Random(7)
    checked = 0
    for _ in range(2000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 20)))
        query = parse_lucene(text).query
        if is_empty(query):
            continue
        rendered = render_query_string(query)
        again = parse_lucene(rendered)
        assert query_key(again.query) == query_key(query), (text, rendered)
        assert again.repairs == [], (text, rendered, again.repairs)
        checked += 1
    assert checked > 500


def test_parse_never_raises_on_arbitrary_unicode() -> None:
    rng = random.Random(11)
    for _ in range(500):
        text = "".join(chr(rng.randint(0, 0x2FFFF)) for _ in range(rng.randint(0, 40)))
        parsed = parse_lucene(text)
        render_tantivy(parsed.query).encode()
        render_query_string(parsed.query).encode()
