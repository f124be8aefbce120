"""The shape of a question, read without a call, so the decompose prompt can show worked plans
of that shape only (``agent.planner.examples``) and the router can group questions
(``agent.checks.escalation.route_shape``).

Measured on v3 (2Wiki questions 51-100): with one fixed pair of examples in the prompt ("birth
year of #1", "birth date of Y") the 1.5B planner copied their relations into 10 of 22
compositional questions that asked "where", and planned "birth year of" a film. A small model
imitates the examples it is shown; showing it plans of the question's own shape (a chain, a
comparison, a comparison of related things, a family relation, one fact) gives it the right
thing to imitate (56dfb31; the tuning runs at those commits, "shape-aware decomposition", are in
``evals/results/HISTORY.md``, 2026-11-25).

The shapes:

- ``comparison``: "A or B?", "Are A and B both / the same ...?"; one query per alternative.
- ``bridge_comparison``: a comparison of things related to the alternatives ("Which film has
  the director who died first, A or B?"): find each related thing, then compare.
- ``inference``: a family relation that is a chain of parent/child/spouse steps
  ("maternal grandfather" = mother, then her father).
- ``composition``: a description that must be resolved first ("the wife of X", "the band that
  released Y", "X's father"), then asked about.
- ``single``: one fact.
"""

from __future__ import annotations

import re
from typing import Literal

from agent.rules.alternatives import choices

Shape = Literal["comparison", "bridge_comparison", "inference", "composition", "single"]
SHAPES: tuple[Shape, ...] = (
    "comparison",
    "bridge_comparison",
    "inference",
    "composition",
    "single",
)

_KINSHIP = re.compile(
    r"\b(?:grand(?:father|mother|parent|son|daughter|child)s?"
    r"|(?:father|mother|son|daughter|brother|sister|sibling|parent)s?[- ]in[- ]laws?"
    r"|uncles?|aunts?|nephews?|nieces?|step(?:father|mother|son|daughter)s?)\b",
    re.IGNORECASE,
)
# A thing defined by its relation to another: "director of", "the band that", "X's wife".
_ROLE = (
    r"(?:director|directors|performer|performers|composer|composers|author|authors|writer|"
    r"writers|producer|producers|creator|creators|founder|founders|father|mother|spouse|wife|"
    r"husband|son|daughter|child|owner|publisher|developer|manufacturer|designer|architect|"
    r"singer|artist|band|team|company|label|creator|screenwriter|editor|star|leader|member)"
)
_RELATED = re.compile(
    rf"\b{_ROLE}\b(?:\s+of\b|\s+who\b|\s+that\b|\s+whose\b)"
    rf"|\b(?:has|had|have|with)\s+the\s+{_ROLE}\b|\bwhose\s+{_ROLE}\b",
    re.IGNORECASE,
)
_COMPARE_WORDS = re.compile(
    r"\b(?:both|same|first|earlier|later|older|younger|longer|shorter|more|less|larger|smaller|"
    r"bigger|higher|lower|taller|farther|further|closer|sooner|most|least)\b",
    re.IGNORECASE,
)
_YES_NO_START = re.compile(r"^\s*(?:are|were|is|was|do|does|did|have|has|had|can|could)\b", re.I)
_POSSESSIVE = re.compile(r"[\w)]['’]s\s+\w", re.IGNORECASE)
_CHAIN_MARK = re.compile(
    r"\b(?:of|by|for|from|in)\s+(?:the|a|an)\s+\w+"  # "of the band", "by the company"
    r"|\bthe\s+\w+\s+of\b"  # "the narrator of"
    r"|\s(?:who|that|which|whose|where)\s+\w+",  # a relative clause in the middle
    re.IGNORECASE,
)


def question_shape(question: str) -> Shape:
    """The question's shape (see the module docstring). Cheap rules on the wording: a wrong
    shape only changes which examples the planner sees and how the router groups the question,
    never what the planner may plan. A comparison offers two alternatives (``choices``), or
    says "or" with a comparing word, or opens like a yes/no question about "both"/"same"/"and";
    a comparison of things related to the alternatives ("the director of") is a bridge
    comparison; a kinship word ("grandfather", "son-in-law") a family relation; a relative
    clause, an "of the X" or a possessive after the first words a composition."""
    text = " ".join(question.split())
    offered = choices(text)
    comparing = (
        len(offered) >= 2
        or (" or " in text and bool(_COMPARE_WORDS.search(text)))
        or (
            bool(_YES_NO_START.match(text))
            and bool(re.search(r"\b(?:both|same|and)\b", text, re.I))
            and bool(_COMPARE_WORDS.search(text) or " and " in text)
        )
    )
    if comparing:
        return "bridge_comparison" if _RELATED.search(text) else "comparison"
    if _KINSHIP.search(text):
        return "inference"
    # a relative clause or "of the X" after the first words, or a possessive: a description to
    # resolve before the question's own relation can be asked
    body = text.split(" ", 2)[-1] if text.count(" ") >= 2 else text
    if _RELATED.search(text) or _POSSESSIVE.search(text) or _CHAIN_MARK.search(body):
        return "composition"
    return "single"
