"""Table-driven: Lucene strings (hostile ones included) run against a real tantivy index.

Each case asserts Lucene's meaning on a hand-made corpus built so the case is decisive: the
corpus has near-misses (the words of a phrase apart, a name in the text but not the title, an
accented spelling) that a wrong rendering would return or miss. Every case also asserts that
tantivy accepts the rendered string (or that the query is empty and renders to nothing).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from searchers.lucene import is_empty, parse_lucene, render_tantivy
from searchers.passages import Passage
from searchers.sparse_tantivy import TantivySparseIndex

CORPUS = {
    "p01": ("Solar panels", "Rooftop solar panels convert sunlight into electricity."),
    "p02": ("Solar eclipse", "A total solar eclipse darkens the sky when the moon covers the sun."),
    "p03": ("Wind power", "Wind turbines generate electricity; some farms pair them with solar."),
    "p04": ("Lunar eclipse", "During a lunar eclipse the shadow of the earth falls on the moon."),
    "p05": ("Panels and solar", "Wooden panels line the hall; a solar system model hangs above."),
    "p06": ("Marie Curie", "Marie Curie won the Nobel Prize in Physics and in Chemistry."),
    "p07": ("Pierre Curie", "Pierre Curie shared the 1903 Nobel Prize in Physics."),
    "p08": ("Nobel Prize", "The Nobel Prize is awarded in Stockholm each December."),
    "p09": ("Python (programming language)", "Python is a programming language by Guido."),
    "p10": ("Python (snake)", "The python is a large constricting snake of Africa and Asia."),
    "p11": ("Java", "Java is an island of Indonesia and also a programming language."),
    "p12": ("C++", "C++ is a programming language derived from C by Bjarne Stroustrup."),
    "p13": ("Beyoncé", "Beyoncé Knowles is an American singer from Houston."),
    "p14": ("São Paulo", "São Paulo is the largest city in Brazil."),
    "p15": ("Tokyo", "東京 is the capital of Japan; Tokyo Tower stands in Minato."),
    "p16": ("Apple Inc.", "Apple designs the iPhone and Mac computers in Cupertino."),
    "p17": ("Apple (fruit)", "An apple is an edible fruit; orchards grow apples in Washington."),
    "p18": ("Mercury (planet)", "Mercury is the smallest planet and the closest to the sun."),
    "p19": ("Mercury (element)", "Mercury is a chemical element, a liquid metal, symbol Hg."),
    "p20": ("Freddie Mercury", "Freddie Mercury was the lead singer of the rock band Queen."),
    "p21": ("Queen (band)", "Queen is a British rock band formed in London in 1970."),
    "p22": ("Queen Victoria", "Victoria was queen of the United Kingdom from 1837."),
    "p23": ("Amazon River", "The Amazon river flows through Brazil into the Atlantic."),
    "p24": ("Amazon (company)", "Amazon sells books online and runs cloud computing services."),
    "p25": ("Moon landing", "Apollo 11 landed on the moon in July 1969."),
    "p26": ("Einstein", "Albert Einstein received the Nobel Prize in Physics in 1921."),
    "p27": ("Solar wind", "The solar wind is a stream of charged particles from the sun."),
    "p28": ("Hydro power", "Dams produce hydroelectric power from rivers."),
    "p29": ("Paris", "Paris is the capital of France on the river Seine."),
    "p30": ("Berlin", "Berlin is the capital of Germany."),
}

SOLAR = {"p01", "p02", "p03", "p05", "p27"}
MERCURY = {"p18", "p19", "p20"}
NOBEL = {"p06", "p07", "p08", "p26"}
CAPITAL = {"p15", "p29", "p30"}


@dataclass(frozen=True)
class Case:
    """``exactly``: the full result set; ``includes``/``excludes``: ids that must / must not be
    returned; ``first``: the top hit; ``each_has``/``none_has``: a word every / no result holds
    (title or text, case-insensitive); ``repair``: a substring of some repair note."""

    query: str
    exactly: frozenset[str] | None = None
    includes: frozenset[str] = field(default_factory=frozenset)
    excludes: frozenset[str] = field(default_factory=frozenset)
    first: str | None = None
    each_has: str | None = None
    none_has: str | None = None
    repair: str | None = None


def case(query: str, **kw: object) -> Case:
    for key in ("exactly", "includes", "excludes"):
        if key in kw:
            kw[key] = frozenset(kw[key])  # type: ignore[arg-type]
    return Case(query, **kw)  # type: ignore[arg-type]


EMPTY: set[str] = set()

CASES = [
    # exclusion
    case("solar -eclipse", includes={"p01", "p03", "p27"}, none_has="eclipse"),
    case("mercury AND NOT planet", exactly={"p19", "p20"}),
    case("mercury && !planet", exactly={"p19", "p20"}),
    case("apple -fruit", exactly={"p16"}),
    case("(python java) -snake -island", exactly={"p09"}),
    case("capital^2 -(berlin paris)", exactly={"p15"}),
    case('"nobel prize" -physics', exactly={"p08"}),
    case("+queen +band -victoria", exactly={"p20", "p21"}),
    # phrases, proximity, boosts and ranking
    case('"solar panels"^3 wind', first="p01", includes={"p03", "p27"}),
    case('"solar panels"', exactly={"p01"}),
    case('"Solar Wind"', exactly={"p27"}),
    case('"moon sun"~5', exactly={"p02"}),
    case('"moon sun"', exactly=EMPTY),
    case("fruit^5 iphone", first="p17", exactly={"p16", "p17"}),
    case("fruit iphone^5", first="p16", exactly={"p16", "p17"}),
    case("title:fruit^0.01 text:iphone", first="p16", exactly={"p16", "p17"}),
    case('"Beyoncé" +"singer"^2', first="p13", exactly={"p13", "p20"}),
    # required clauses and conjunctions (Lucene's classic parser rules)
    case("+python snake", first="p10", exactly={"p09", "p10"}, each_has="python"),
    case('"solar" AND "wind"', exactly={"p03", "p27"}),
    case("solar AND wind OR hydro", exactly={"p03", "p27"}),
    case("hydro OR wind AND solar", exactly={"p03", "p27"}),
    case("mercury || queen", exactly=MERCURY | {"p21", "p22"}),
    case("solar AND AND eclipse", exactly={"p02"}, repair="misplaced"),
    # fields
    case("title:queen", exactly={"p21", "p22"}),
    case("TITLE:Berlin", exactly={"p30"}),
    case('title:"nobel prize"', exactly={"p08"}),
    case("title:(solar wind)", exactly={"p01", "p02", "p03", "p05", "p27"}),
    case("+title:solar -title:eclipse", exactly={"p01", "p05", "p27"}),
    case("title:-eclipse solar", includes={"p01", "p27"}, excludes={"p02"}, repair="moved"),
    case("foo:bar nobel", exactly=NOBEL, repair="unknown field 'foo'"),
    # groups
    case("(apple OR amazon) AND brazil", exactly={"p23"}),
    case("(solar -eclipse) moon", exactly=SOLAR | {"p04", "p25"}),  # p02 comes back via moon
    case("+(solar -eclipse) moon", exactly=SOLAR - {"p02"}),
    case("+(python java) +language", exactly={"p09", "p11"}),
    case("capital (-france)", exactly={"p15", "p30"}, repair="moved them out"),
    case("capital AND (-germany)", exactly={"p15", "p29"}),
    case("-(-berlin) capital", exactly=CAPITAL, repair="excludes nothing"),
    case("(((((((((((((solar)))))))))))))", exactly=SOLAR, repair="flattened"),
    case("((solar) AND (eclipse)", exactly={"p02"}, repair="unbalanced '('"),
    case("solar)) eclipse ((", exactly=SOLAR | {"p04"}, repair="unbalanced ')'"),
    # analysis: folding, stemming, unicode, multi-token terms
    case("beyonce", exactly={"p13"}),
    case("Sao Paulo", exactly={"p14"}),
    case("東京", exactly={"p15"}),
    case("C++", exactly={"p12"}),
    case("nobel-physics", exactly=NOBEL),
    case("einstein\\:physics", exactly={"p06", "p07", "p26"}),
    case("🌞 solar", exactly=SOLAR),
    # malformed input from a small model: repaired, never an error
    case('"unbalanced solar', exactly=SOLAR, repair="unbalanced quote"),
    case("python^", exactly={"p09", "p10"}, repair="'^'"),
    case("python~2", exactly={"p09", "p10"}, repair="'~2'"),
    case("program*", exactly={"p09", "p11", "p12"}, repair="wildcard"),
    case("capital - france", exactly=CAPITAL, repair="lone '-'"),
    case("nobel^1e9 curie", first="p08", repair="clamped"),
    case("nobel^0 curie^-1", exactly=NOBEL, repair="positive number"),
    case("AND solar AND", exactly=SOLAR, repair="leading 'AND'"),
    case("[berlin TO paris]", includes={"p29", "p30"}),
    case("solar\n\t\x00eclipse\r", exactly=SOLAR | {"p04"}),
    case('"a \\"quoted\\" solar wind"', exactly=EMPTY),
    case("{!lucene q.op=AND}solar", includes=SOLAR),
    case("'; DROP TABLE passages; --", exactly=EMPTY),
    # queries that can match nothing: a clean empty result, never an engine error
    case("NOT eclipse", exactly=EMPTY, repair="only excluded"),
    case("-eclipse -moon", exactly=EMPTY, repair="only excluded"),
    case("NOT NOT solar", exactly=EMPTY),
    case("", exactly=EMPTY, repair="empty query"),
    case("&& || ! ^ ~ * ?", exactly=EMPTY, repair="empty query"),
    case("*:*", exactly=EMPTY),
    case("title:", exactly=EMPTY, repair="dangling"),
    case("+ -", exactly=EMPTY),
    case("\\", exactly=EMPTY),
    case("x" * 60 + " -solar", exactly=EMPTY),
    # size limits
    case("solar " * 500 + "eclipse", exactly=SOLAR, repair="kept the first 64"),
    case("(" * 300 + "moon" + ")" * 300, exactly={"p02", "p04", "p25"}),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    path: Path = tmp_path_factory.mktemp("lucene") / "sparse"
    built = TantivySparseIndex.create(path)
    built.add(Passage(pid, title, text) for pid, (title, text) in CORPUS.items())
    return built


def test_table_is_large_and_distinct() -> None:
    assert len(CASES) >= 40
    assert len({c.query for c in CASES}) == len(CASES)


def _holds(pid: str, word: str) -> bool:
    title, text = CORPUS[pid]
    return word.casefold() in f"{title} {text}".casefold()


@pytest.mark.parametrize("c", CASES, ids=[repr(c.query[:40]) for c in CASES])
def test_lucene_meaning_on_tantivy(index: TantivySparseIndex, c: Case) -> None:
    parsed = parse_lucene(c.query)
    compiled = index.compile_query(parsed.query)  # raises if tantivy refuses the rendering
    assert (compiled is None) == (render_tantivy(parsed.query) == "")
    hits = index.retrieve(c.query, k=50)
    ids = [hit.id for hit in hits]
    assert len(ids) == len(set(ids))
    assert all(hit.retriever == "sparse" for hit in hits)
    if c.exactly is not None:
        assert set(ids) == c.exactly, (parsed, render_tantivy(parsed.query))
        if c.exactly:
            assert not is_empty(parsed.query)
    assert c.includes <= set(ids), ids
    assert not c.excludes & set(ids), ids
    if c.first is not None:
        assert ids and ids[0] == c.first, [(h.id, h.score) for h in hits]
    if c.each_has is not None:
        assert all(_holds(pid, c.each_has) for pid in ids)
    if c.none_has is not None:
        assert not any(_holds(pid, c.none_has) for pid in ids)
    if c.repair is not None:
        assert any(c.repair in note for note in parsed.repairs), parsed.repairs
    assert len(parsed.repairs) <= 20


_HOSTILE = [*'+-!"()^~*?:\\/[]{}&|<>= \t\n', "AND", "OR", "NOT", "TO", "title:", "text:"]
_WORDS = ["solar", "eclipse", "moon", "Beyoncé", "東京", "x" * 45, "nobel", "prize", "2024"]


def test_random_hostile_strings_always_render_to_something_tantivy_accepts(
    index: TantivySparseIndex,
) -> None:
    rng = random.Random(20241122)
    alphabet = _HOSTILE + _WORDS + [" "] * 8
    refused = []
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        parsed = parse_lucene(text)
        try:
            index.compile_query(parsed.query)
        except ValueError as exc:
            refused.append((text, render_tantivy(parsed.query), str(exc)))
        if is_empty(parsed.query):
            assert index.retrieve(text) == []
    assert not refused, refused[:5]
