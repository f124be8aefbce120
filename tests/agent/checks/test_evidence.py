"""Finding support and the answer step's choice of passages: pure functions, no model."""

from __future__ import annotations

from agent.checks.evidence import Finding, relevance, select_evidence, support
from searchers.verification import contains_span

BAND = {
    "id": "band",
    "title": "Tinted Windows (band)",
    "text": "Tinted Windows is an American rock supergroup. They played their first show at "
    "Cain's Ballroom in Tulsa, Oklahoma on March 18, 2009.",
}
ALBUM = {
    "id": "album",
    "title": "Tinted Windows (album)",
    "text": "Tinted Windows is the debut album by the supergroup Tinted Windows.",
}
COC = {
    "id": "coc",
    "title": "Corrosion of Conformity",
    "text": "Corrosion of Conformity released their album on February 28, 2012.",
}
TULSA = {
    "id": "tulsa",
    "title": "Tulsa, Oklahoma",
    "text": "Tulsa is the second-largest city in the state of Oklahoma.",
}
HANSON = {
    "id": "hanson",
    "title": "Hanson (band)",
    "text": "Hanson is a pop rock band from Tulsa formed by three brothers.",
}
PASSAGES = {p["id"]: p for p in (BAND, ALBUM, COC, TULSA, HANSON)}


def test_a_span_its_cited_passage_holds_is_supported() -> None:
    assert support("Cain's Ballroom", [BAND], [BAND, COC]) == ["band"]
    assert support("tulsa", [BAND], [BAND]) == ["band"]  # case and punctuation ignored


def test_a_small_number_matches_whether_written_as_a_word_or_digits() -> None:
    """The model copies "3" from "three brothers"; the passage holds it all the same."""
    assert support("3", [HANSON], [HANSON], "number of brothers in Hanson") == ["hanson"]
    assert support("4", [HANSON], [HANSON], "number of brothers in Hanson") == []
    assert contains_span("three brothers", "formed by 3 brothers")
    assert not contains_span("3", "formed by thirty brothers")


def test_a_wrong_passage_number_is_repaired_from_the_shown_ones() -> None:
    assert support("Tulsa, Oklahoma", [COC], [COC, BAND]) == ["band"]


def test_an_invented_span_is_unsupported() -> None:
    assert support("New York", [BAND], [BAND, COC, ALBUM]) == []
    assert support("", [BAND], [BAND]) == []
    assert support("unknown", [BAND], [BAND]) == []


def test_a_restated_span_counts_when_its_words_are_in_one_passage() -> None:
    # the words are there, not the phrase: "Tulsa Oklahoma" from "Tulsa, Oklahoma"
    assert support("Tulsa Oklahoma", [], [COC, BAND]) == ["band"]
    # a sentence-long reply is not a span: too many words to check this way
    long = "the band first played a show in the city of Tulsa in the state of Oklahoma in 2009"
    assert support(long, [BAND], [BAND]) == []


def test_yes_no_is_supported_only_by_a_cited_passage_that_was_shown() -> None:
    assert support("yes", [BAND], [BAND]) == ["band"]
    assert support("no", [], [BAND]) == []
    assert support("yes", [COC], [BAND]) == []


def test_relevance_rewards_the_bridge_entity_a_finding_named() -> None:
    question = "The band who released Tinted Windows played first in what city?"
    with_bridge = relevance(
        question, [Finding("city of first show", "Tulsa", ("band",))], [TULSA, COC]
    )
    without = relevance(question, [], [TULSA, COC])
    assert with_bridge["tulsa"] > with_bridge["coc"]
    assert with_bridge["tulsa"] > without["tulsa"]


def test_evidence_puts_each_findings_passage_first_then_ranks_the_rest() -> None:
    question = "The band who released the debut album Tinted Windows had its first show where?"
    findings = [
        Finding("band of the album Tinted Windows", "Tinted Windows", ("album", "band")),
        Finding("first show of Tinted Windows", "Cain's Ballroom", ("band",)),
    ]
    ranked = [["coc", "album", "hanson"], ["tulsa", "band", "coc"]]
    chosen = select_evidence(question, findings, ranked, PASSAGES, limit=4)
    # each finding's first passage, then the findings' other sources, then by relevance
    assert chosen[:2] == ["album", "band"]
    assert len(chosen) == 4 and len(set(chosen)) == 4
    assert select_evidence(question, findings, ranked, PASSAGES, limit=4) == chosen  # stable


def test_evidence_without_findings_ranks_by_the_question_and_breaks_ties_by_rank() -> None:
    ranked = [["hanson", "tulsa"], ["coc"]]
    chosen = select_evidence("Which city is Hanson from?", [], ranked, PASSAGES, limit=2)
    assert chosen == ["hanson", "tulsa"]
    # ids no search returned are never shown, and the limit holds
    assert select_evidence("q", [Finding("x", "y", ("gone",))], [[]], PASSAGES, 3) == []


def test_a_span_from_a_passage_about_something_else_is_unsupported() -> None:
    essay = {
        "id": "essay",
        "title": "Chicago: City on the Make",
        "text": "Chicago: City on the Make is an essay by Nelson Algren published in 1951.",
    }
    assert support("Chicago", [essay], [essay, BAND], "city of Tinted Windows") == []
    assert support("Tulsa", [essay], [essay, BAND], "city of Tinted Windows") == ["band"]
    # a query with no names cannot be anchored: the span alone decides
    assert support("Chicago", [essay], [essay], "which city is on the make") == ["essay"]


def test_an_answer_that_only_repeats_the_query_is_unsupported() -> None:
    query = "first performance of Tinted Windows"
    assert support("Tinted Windows", [BAND], [BAND], query) == []
    assert support("Cain's Ballroom", [BAND], [BAND], query) == ["band"]


def test_a_passage_must_name_a_whole_name_of_the_query() -> None:
    river = {"id": "r", "title": "Mthatha River", "text": "The Mthatha River flows alone."}
    moselle = {"id": "m", "title": "Moselle", "text": "The Moselle flows past Trier."}
    query = "river next to the town where 'I Drink My Coffee Alone' comes from? Trier, Germany"
    # "Alone" is one word of a name, not the name: the Mthatha passage names nothing asked
    assert support("Mthatha River", [river], [river, moselle], query) == []
    assert support("Moselle", [river], [river, moselle], query) == ["m"]


def test_an_alternative_the_query_offers_is_an_answer_not_a_restatement() -> None:
    query = "Who was older, Tinted Windows or Hanson?"
    assert support("Hanson", [HANSON], [HANSON], query) == ["hanson"]
    assert support("older", [HANSON], [HANSON], query) == []


def test_a_retold_passage_is_not_a_finding() -> None:
    retold = "Tinted Windows is an American rock supergroup. They played their first show at Cain's"
    assert support(retold, [BAND], [BAND], "first show of Tinted Windows") == []


def test_a_long_name_with_one_word_spelled_otherwise_still_names_the_passage() -> None:
    from agent.checks.evidence import names_one
    from agent.rules.claims import anchors

    passage = {"id": "t", "title": "Thomas Tudor Tucker", "text": "Tucker was born in Bermuda."}
    assert names_one(anchors("where Representative Thomas Tucker was from"), passage)
    # a two-word name needs both words
    assert not names_one(anchors("birthplace of Thomas Arlen"), passage)


def test_a_multi_word_name_counts_when_half_its_words_occur() -> None:
    """One rule for "does this text mention the query's terms": the searchers' coverage check
    and the answer step's no-model fallback both count a name a passage abbreviates."""
    from searchers.text import key_terms
    from searchers.verification import terms_present

    terms = key_terms("Where was Gustave Eiffel born?")
    assert terms == ["gustave eiffel"]
    assert terms_present(terms, "Eiffel was born in Dijon.") == 1
    assert terms_present(terms, "Gustave Eiffel was born in Dijon.") == 1
    assert terms_present(terms, "A tower stands in Paris.") == 0
