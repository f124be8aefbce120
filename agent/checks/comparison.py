"""Deciding "A or B?" comparisons from the findings, without asking the model to compare.

Comparing two dates or two numbers is arithmetic, not reading (the 1.5B reader gets it wrong
with both dates in its notes): when the question offers two alternatives (``Question.choices``),
says which way it compares (``Question.direction``) and each alternative has a supported finding
that is a date or a number (``agent.rules.values``), the answer is computed (``resolve``);
anything less clear is left to the reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from agent.rules.question import Question
from agent.rules.values import parse_date, parse_number
from searchers.text import normalize_answer_folded


@dataclass(frozen=True)
class Comparison:
    """What the resolver read and chose, for the trace."""

    direction: str  # "min" | "max"
    kind: str  # "date" | "number"
    values: dict[str, str]  # alternative -> the finding it compared
    picked: str

    def to_json(self) -> dict[str, object]:
        """Its fields, in order, for the trace."""
        return asdict(self)


def _naming(name: str, others: Sequence[str], findings: Sequence[tuple[str, str]]) -> list[str]:
    """The answers of the queries that name ``name`` and none of ``others``."""
    key = f" {normalize_answer_folded(name)} "
    return [
        answer
        for query, answer in findings
        if key in f" {normalize_answer_folded(query)} "
        and not any(
            f" {normalize_answer_folded(o)} " in f" {normalize_answer_folded(query)} "
            for o in others
        )
    ]


def _value_of(
    alternative: str, others: Sequence[str], findings: Sequence[tuple[str, str]], kind: str
) -> str | None:
    """The one date or number the findings give for ``alternative``: a finding of a query about
    it, or, one hop on, a finding of a query about what its finding named ("Which film has the
    director born first?": "director of A" -> "Edward H. Griffith", then "birth date of Edward
    H. Griffith" -> the date). None when there is none or more than one."""
    parse = parse_date if kind == "date" else parse_number
    direct = _naming(alternative, others, findings)
    values = {v for v in direct if parse(v) is not None}
    if values:
        return values.pop() if len(values) == 1 else None
    bridged = {
        v
        for bridge in set(direct)
        for v in _naming(bridge, others, findings)
        if parse(v) is not None
    }
    return bridged.pop() if len(bridged) == 1 else None


def resolve(question: Question, findings: Sequence[tuple[str, str]]) -> Comparison | None:
    """The alternative the findings decide, given (query, supported answer) pairs; None when
    the question is not a two-way comparison (two ``choices`` and a ``direction``), or the
    findings do not give one clear value of the same kind for each alternative, or the values
    tie."""
    offered = question.choices
    way = question.direction
    if len(offered) != 2 or way is None:
        return None
    kind = "date" if way[1] == "date" else "number"
    picked_values: dict[str, str] = {}
    for alternative in offered:
        others = [o for o in offered if o != alternative]
        value = _value_of(alternative, others, findings, kind)
        if value is None:
            return None
        picked_values[alternative] = value
    if kind == "date":
        # compare at the precision both share: "1937" against "October 17, 1948" is by year
        a, b = (parse_date(picked_values[x]) for x in offered)
        assert a is not None and b is not None
        depth = 1 + (bool(a[1] and b[1])) + (bool(a[1] and b[1] and a[2] and b[2]))
        ka: tuple[float, ...] = a[:depth]
        kb: tuple[float, ...] = b[:depth]
    else:
        na, nb = (parse_number(picked_values[x]) for x in offered)
        assert na is not None and nb is not None
        ka, kb = (na,), (nb,)
    if ka == kb:
        return None
    smaller = offered[0] if ka < kb else offered[1]
    larger = offered[1] if smaller == offered[0] else offered[0]
    picked = smaller if way[0] == "min" else larger
    return Comparison(way[0], kind, picked_values, picked)
