"""The lexical grounding check of tree summaries, on hand-made summaries and the hand-made tree."""

from __future__ import annotations

from tests.tree.test_store import hand_tree
from tree.grounding import grounding, terms, unsupported_terms
from tree.report import tree_report

REM = [
    "R.E.M. was an American rock band from Athens, Georgia, formed in 1980 by Michael Stipe.",
    "Their debut album Murmur came out in 1983 and sold 1,000,000 copies.",
]


def test_a_blended_summary_shows_the_names_and_numbers_it_made_up() -> None:
    summary = (
        "R.E.M. was a rock band from Athens formed in 1982 by Paul McCartney and John Lennon. "
        "Their album Murmur came out in 1983 and sold 1000000 copies."
    )
    assert unsupported_terms(summary, REM) == ["1982", "john", "lennon", "mccartney", "paul"]


def test_a_possessive_is_supported_by_the_bare_name() -> None:
    assert unsupported_terms("Murmur was Stipe's debut; it sold in Athens’s shops.", REM) == []


def test_sentence_openers_initials_and_single_digits_are_no_terms() -> None:
    text = 'About it. "Together" they sold 5 records. J. R. R. Tolkien wrote in 1937; In short.'
    assert terms(text) == {"tolkien", "1937"}


def test_a_faithful_summary_is_grounded() -> None:
    summary = "Formed in Athens, Georgia, in 1980, R.E.M. released Murmur in 1983."
    assert unsupported_terms(summary, REM) == []
    counted = grounding([(summary, REM), ("It was made by Paul McCartney.", REM)])
    assert counted.as_dict() == {
        "summaries": 2,
        "with_unsupported_terms": 1,
        "share_with_unsupported_terms": 0.5,
        "unsupported_share_of_terms": round(2 / 7, 4),  # paul, mccartney of 5 + 2 terms
    }
    assert grounding([]).as_dict()["share_with_unsupported_terms"] is None


def test_the_tree_report_counts_ungrounded_summaries_per_layer() -> None:
    tree = hand_tree()
    report = tree_report(tree)
    # "About cats." / "Ships and bread." / "Cats, ships, bread.": nothing made up
    assert report["grounding"]["with_unsupported_terms"] == 0
    assert [row["share_with_unsupported_terms"] for row in report["per_layer"]] == [0.0, 0.0]
    # the root claims a name that neither of its children (the layer-1 summaries) has
    root = next(n for n in tree.nodes if n.id == "root")
    root.text = "Cats, ships and bread, as Paul McCartney saw them."
    blended = tree_report(tree)
    assert blended["grounding"]["with_unsupported_terms"] == 1
    assert [row["share_with_unsupported_terms"] for row in blended["per_layer"]] == [0.0, 1.0]
