"""The text rules of hoptree, in one place: words, terms, answer normalisation, sentences.

Every package matches text against text (a query against passages, an answer against its
evidence, a prediction against the gold answer), and copies of such rules drift: hoptree had
four span matchers before ``contains_span``. So the rules live here, in the lowest floor every
user may import (``searchers``; ``tree``, ``agent`` and ``evals`` sit above it), and callers
import these public names rather than each other's private ones.

Where two rules differ on purpose, both are kept under names that say how:

- answer normalisation: ``normalize_answer_official`` is the official HotpotQA/SQuAD script,
  character for character (ASCII punctuation deleted, no accent folding), because evaluation
  numbers are compared with published ones; ``normalize_answer_folded`` is hoptree's own for
  matching spans (accents folded, all punctuation a space), because "Beyoncé" must match
  "Beyonce" and "Cain's" must keep "Cain" a word of its own;
- sentence splitting: ``split_sentences`` for prose (chunks, tree leaves, repetition), with an
  abbreviation list; ``split_cited_sentences`` for an answer with ``[n]`` marks, which keeps
  a mark written after the period with its sentence and knows titles and "No. 1";
  ``split_sentences_loose`` for picking a passage's sentences to show (``focus_text``), where
  only a capital initial holds a period. Each splits differently on some text, and changing
  one would move chunk boundaries (so indexes and scores) or the citation check's verdicts.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata

# --- words and terms ----------------------------------------------------------------------

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself also did
    name named famous known first last many much one two three year years whose born located
    based released american""".split()
)
#: A word: letters and digits, with an inner apostrophe ("Cain's", "don’t"); no underscores.
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_QUOTED = re.compile(r'"([^"]+)"')
_CAPITALIZED_RUN = re.compile(r"\b(?:[A-Z][\w'’.-]*\s+){0,4}[A-Z][\w'’.-]*")
MAX_KEY_TERMS = 12


@functools.lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Lowercase and strip accents, so "Beyoncé" in a query matches "Beyonce" in a passage.
    Cached: a run folds the same passages again and again (support, relevance, the citation
    check), and NFKD of a passage costs more than hashing it."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude plural/possessive strip: enough for coverage, not a linguistic claim."""
    for suffix in ("'s", "’s", "ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def key_terms(query: str) -> list[str]:
    """The words a passage answering ``query`` can hardly avoid: content words of the query,
    with capitalized names and quoted phrases kept together as single terms."""
    terms: list[str] = []
    seen: set[str] = set()

    def add(term: str) -> None:
        folded = " ".join(stem(w) for w in WORD.findall(fold(term)) if w not in STOPWORDS)
        if folded and folded not in seen and len(terms) < MAX_KEY_TERMS:
            seen.add(folded)
            terms.append(folded)

    for phrase in _QUOTED.findall(query):
        add(phrase)
    stripped = _QUOTED.sub(" ", query)
    for run in _CAPITALIZED_RUN.findall(stripped):
        words = [w for w in WORD.findall(run) if fold(w) not in STOPWORDS]
        if len(words) > 1:
            add(" ".join(words))
    in_names = {w for t in terms if " " in t for w in t.split()}
    for word in WORD.findall(stripped):
        content = fold(word) not in STOPWORDS and (len(word) > 2 or word.isdigit())
        if content and stem(fold(word)) not in in_names:
            add(word)
    return terms


#: A run of letters and digits; an apostrophe splits it ("Cain's" -> "Cain", "s").
PLAIN_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_COMMON = frozenset(
    "the a an of in on at to for by and or is was are were be been what which who whom whose "
    "when where how did does do that this with from as it its his her their they he she".split()
)


# Words a sentence uses for a relation a query names otherwise ("place of birth" -> "He was
# born in Flora."): without them the sentence that answers a hop shares no word with it.
RELATED_WORDS: dict[str, frozenset[str]] = {
    key: frozenset(values.split())
    for key, values in {
        "birth": "born", "born": "birth", "birthplace": "born",
        "death": "died dies dead", "died": "death", "die": "died death",
        "spouse": "married wife husband wed", "wife": "married spouse", "husband": "married spouse",
        "married": "wife husband spouse",
        "father": "son daughter child", "mother": "son daughter child",
        "parent": "son daughter child", "parents": "son daughter child",
        "child": "son daughter father mother", "children": "son daughter sons daughters",
        "son": "father mother", "daughter": "father mother",
        "director": "directed", "directed": "director",
        "study": "studied graduated educated university college school",
        "studied": "graduated educated university college school",
        "education": "studied graduated educated university college school",
        "work": "worked employed", "worked": "work employed",
        "founded": "founder established", "founder": "founded established",
        "released": "release", "release": "released",
        "buried": "burial", "burial": "buried",
        "nationality": "citizen national", "citizenship": "citizen national",
    }.items()
}  # fmt: skip


def content_words(text: str) -> set[str]:
    """The casefolded words of ``text`` minus the commonest function words and single letters:
    what ``focus_text`` compares a passage's sentences with a query by. Lighter than
    ``key_terms`` (no names, no stemming) because it ranks sentences, not retrievals."""
    return {t for t in PLAIN_WORD.findall(text.casefold()) if t not in _COMMON and len(t) > 1}


# --- answer normalisation ------------------------------------------------------------------


def normalize_answer_folded(text: str) -> str:
    """HotpotQA's normalisation made for matching spans: accents folded and casefolded, every
    punctuation mark (Unicode too) a space rather than deleted, no articles, single spaces. So
    "Beyoncé" matches "Beyonce" and "Cain's" keeps "cain" as a word; ``contains_span`` and the
    answer checks compare by it. Not for scores: those use ``normalize_answer_official``."""
    folded = re.sub(r"[^\w\s]", " ", fold(text))
    return " ".join(w for w in folded.split() if w not in {"a", "an", "the"})


_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer_official(text: str) -> str:
    """The official HotpotQA (and SQuAD) script's normalization, character for character:
    lowercase, ASCII punctuation deleted (``string.punctuation``; curly quotes and dashes stay),
    the words a/an/the dropped, whitespace collapsed. Scores are compared with published ones,
    so this must not change; hoptree's own matching uses ``normalize_answer_folded``."""
    lowered = text.lower()
    no_punctuation = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punctuation)
    return " ".join(no_articles.split())


# --- sentences ----------------------------------------------------------------------------

_WS = re.compile(r"\s+")
# A sentence ends at . ! ? or … (then optional closing quotes/brackets), before whitespace and
# something that can start a sentence. A lowercase word after the stop ("e.g. the") is no start.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-Þ])")
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "st", "sr", "jr", "vs", "etc", "no", "fig", "al",
        "inc", "ltd", "co", "corp", "gen", "col", "lt", "sgt", "capt", "rev", "mt", "ft",
        "u.s", "e.g", "i.e", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
        "oct", "nov", "dec",
    }
)  # fmt: skip


def normalize_space(text: str) -> str:
    """Collapse every whitespace run (including non-breaking spaces) to one space."""
    return _WS.sub(" ", text).strip()


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; abbreviations such as "Dr." or "U.S." do not end one."""
    text = normalize_space(text)
    if not text:
        return []
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        candidate = text[start : match.start()].rstrip()
        last_word = candidate.rsplit(" ", 1)[-1].rstrip(".!?…\"'”’)]").lower()
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
            continue  # "Dr. Who", "J. R. R. Tolkien": not a sentence end
        pieces.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    return pieces


# An answer's citation marks, "[1]", "[1][2]", "[1, 2]", written after a sentence's period.
_MARK_RUN = re.compile(r"(?:\s*\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\])*")
_TERMINATOR = re.compile(r"[.!?]+[\"'”’)]*")
_NEXT_START = re.compile(r"\s+[\"'“‘(\[]?(\S)")
# Before these a period never ends a sentence when a capital follows ("St. Louis", "Dr. Who").
_TITLES = frozenset(
    "mr mrs ms dr st ste mt ft fr prof gen col lt sgt capt cmdr adm gov sen rep rev hon pres vs "
    "maj brig".split()
)
# Before these a period does not end a sentence when a digit follows ("No. 1", "Jan. 5").
_BEFORE_DIGIT = frozenset(
    "no nos vol pp p fig op jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")


def _is_abbreviation(text: str, period: int, next_char: str) -> bool:
    """Is the period at ``period`` part of an abbreviation or initial rather than a sentence end?
    A heuristic: titles, initials ("J. R. R."), dotted acronyms ("U.S."), "No." before a digit."""
    before = text[:period].split()
    if not before:
        return False
    token = before[-1].lstrip("\"'“‘([")
    if len(token) == 1 and token.isupper():
        return True
    if _INITIALS.fullmatch(token):
        return True
    lowered = token.lower()
    return lowered in _TITLES or (lowered in _BEFORE_DIGIT and next_char.isdigit())


def split_cited_sentences(text: str) -> list[str]:
    """Split after . ! ? when a capital, digit, quote or bracket follows; citation marks written
    after the period stay with the sentence before them ("... 1950. [2] He died.")."""
    text = " ".join(text.split())
    sentences: list[str] = []
    start = 0
    for end in _TERMINATOR.finditer(text):
        marks_end = _MARK_RUN.match(text, end.end()).end()
        if marks_end == len(text):
            break
        following = _NEXT_START.match(text, marks_end)
        if not following:
            continue
        next_char = following.group(1)
        if not (next_char.isupper() or next_char.isdigit() or next_char in "\"'“‘[("):
            continue
        single_period = end.group().rstrip("\"'”’)") == "."
        if single_period and _is_abbreviation(text, end.start(), next_char):
            continue
        sentences.append(text[start:marks_end].strip())
        start = marks_end
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


_LOOSE_SENTENCE_END = re.compile(r"(?<!\s[A-Z]\.)(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences_loose(text: str) -> list[str]:
    """Split after . ! ? before a capital or digit, unless the period ends a capital initial
    ("J. Smith"); "Dr. Who" is split. Whitespace is kept as given. ``focus_text`` uses it to
    pick the sentences of a passage to show, where a wrong split only adds a "..."."""
    return _LOOSE_SENTENCE_END.split(text)
