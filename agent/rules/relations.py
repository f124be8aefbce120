"""Plans that the words of a family relation define, made without a model call.

"Who is the maternal grandmother of X?" has one right plan: X's mother, then her mother. The
1.5B planner does not always find it: on 2Wiki's report slice (v4, one_call rows 1-39) it
planned only "mother of John Woodville" for his maternal grandmother and answered the mother,
and planned a second "father of #1" for "Who is the father of William II, Duke of Bavaria?"
and answered the grandfather's name. Where the relation is a fixed chain of parent, child and
spouse steps, the chain is written here from the relation's definition, so the plan is right
and the decompose call (a fifth of a question's prompt tokens) is not spent. Measured (245c6b4,
``evals/results/HISTORY.md``, sixth session) on 2Wiki tuning's 15 ``inference`` questions: 29.9
F1 against 27.3 without it, +2.7 [-11.0, +14.9], 4 wins 3 losses; median 5 calls and 1,886
prompt tokens against 6 and 2,156.

Only relations with one reading are planned: "maternal grandfather" is mother, then father;
"grandfather" alone (which side?), "uncle" (a parent's brother, or an aunt's husband?) and
"brother-in-law" (a spouse's brother, or a sister's husband?) are left to the model. The name
must be a name: "Who is the mother of the director of film X?" is a chain through a film, and
the model plans it.
"""

from __future__ import annotations

import re

# relation (lower case, hyphens as written in the table) -> the steps from the named person
RELATION_STEPS: dict[str, tuple[str, ...]] = {
    "father": ("father",),
    "mother": ("mother",),
    "spouse": ("spouse",),
    "wife": ("spouse",),
    "husband": ("spouse",),
    "child": ("child",),
    "son": ("child",),
    "daughter": ("child",),
    "sibling": ("sibling",),
    "maternal grandfather": ("mother", "father"),
    "maternal grandmother": ("mother", "mother"),
    "paternal grandfather": ("father", "father"),
    "paternal grandmother": ("father", "mother"),
    "grandchild": ("child", "child"),
    "grandson": ("child", "child"),
    "granddaughter": ("child", "child"),
    "father-in-law": ("spouse", "father"),
    "mother-in-law": ("spouse", "mother"),
    "child-in-law": ("child", "spouse"),
    "son-in-law": ("child", "spouse"),
    "daughter-in-law": ("child", "spouse"),
    "stepfather": ("mother", "spouse"),
    "stepmother": ("father", "spouse"),
    "stepchild": ("spouse", "child"),
    "stepson": ("spouse", "child"),
    "stepdaughter": ("spouse", "child"),
}

_RELATION = "|".join(
    sorted((re.escape(r).replace("\\-", "[- ]?") for r in RELATION_STEPS), key=len, reverse=True)
)
_ASK = r"^\s*(?:who|whom)\s+(?:is|was|are|were)\s+"
_END = r"\s*\?*\s*$"
# "Who is the maternal grandfather of X?"
_OF_FORM = re.compile(rf"{_ASK}the\s+(?P<rel>{_RELATION})\s+of\s+(?P<name>.+?){_END}", re.I)
# "Who is X's paternal grandfather?", "Who was James' father?"
_POSSESSIVE_FORM = re.compile(
    rf"{_ASK}(?P<name>.+?)(?:['’]s|(?<=s)['’])\s+(?P<rel>{_RELATION}){_END}", re.I
)
# The lower-case words a name may hold ("Catherine of Aragon", "Ludwig van Beethoven"); any
# other lower-case word makes it a description: "the director of film X", "Nim's actress in
# Return to Nim's Island" (MuSiQue), "a man who".
_NAME_PARTICLES = frozenset(
    "of de du des la le les von van der den da di del della dos das al el bin bint ibn y e "
    "and af zu ter".split()
)

# "Who is X's father's mother?": the name is itself a relation of someone
_NESTED = re.compile(rf"(?:['’]s|(?<=s)['’])\s+(?:{_RELATION})\b", re.I)


def _relation_key(text: str) -> str:
    words = re.split(r"[\s-]+", text.casefold())
    key = " ".join(words)
    for relation in RELATION_STEPS:
        if key == relation.replace("-", " ") or key == relation.replace("-", ""):
            return relation
    return key


def relation_plan(question: str) -> list[str] | None:
    """The atomic queries of a family-relation question ("mother of X", "father of #1"), or
    None when the question is not one whose relation fixes its plan: "Who is/was the <relation>
    of <name>?" or "Who is/was <name>'s <relation>?", the relation one of ``RELATION_STEPS``
    and the name a name (capitalised, no lowercase word but a name particle, not itself a
    relation of someone). The decompose step plans it, with no call, whenever decomposition is
    on."""
    text = " ".join(question.split())
    match = _OF_FORM.match(text) or _POSSESSIVE_FORM.match(text)
    if match is None:
        return None
    name = match.group("name").strip(" \"'“”‘’")
    steps = RELATION_STEPS.get(_relation_key(match.group("rel")))
    if not steps or not name or not (name[0].isupper() or name[0].isdigit()):
        return None
    lower = [w for w in re.findall(r"[^\W\d_][\w'’.-]*", name) if w[0].islower()]
    if _NESTED.search(name) or any(w not in _NAME_PARTICLES for w in lower):
        return None
    return [f"{steps[0]} of {name}", *(f"{step} of #{n}" for n, step in enumerate(steps[1:], 1))]
