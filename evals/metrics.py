"""Answer and retrieval metrics, following the official HotpotQA script and LevelRAG.

Why these exact rules: the numbers are compared with published ones (HotpotQA leaderboard,
LevelRAG's tables, FlashRAG baselines), so normalization is the official script's, character for
character: lowercase, drop ASCII punctuation (``string.punctuation``; the official script leaves
non-ASCII punctuation such as curly quotes and dashes alone, and so do we), drop the words
a/an/the, collapse whitespace. Per question scores are in [0, 1]; with several gold aliases
(2WikiMultihopQA) each score is the best over the aliases, independently per metric.

- EM: normalized strings are equal.
- F1: token-overlap F1; zero when either side normalizes to yes/no/noanswer and they differ
  (otherwise "no" would get partial credit against "no, he did not").
- Accuracy (LevelRAG, FlashRAG's "acc"): the normalized gold occurs inside the normalized
  prediction as a plain substring, as those papers compute it; an empty normalized gold never
  counts (it would be inside everything).
- Retrieval success: a gold answer occurs in the context handed to the generator, matched on
  whole tokens (FlashRAG's ``has_answer``), since a plain substring would find "1" in every
  year. Undefined (None) for yes/no answers: they are decided, not found in a passage.
- Gold-paragraph recall: share of the supporting titles among the retrieved titles.
- Hop recall: share of a question's gold hops (MuSiQue's decomposition, 2Wiki's evidences)
  whose paragraph was retrieved, by passage id; with the queries a planner ran, how many of them
  found no gold hop's paragraph at all (a query that went astray, or one that was not needed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from evals.datasets import GoldHop
from searchers.text import normalize_answer_official

# Answers the official F1 refuses partial credit for.
SPECIAL_ANSWERS = frozenset({"yes", "no", "noanswer"})


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer_official(prediction) == normalize_answer_official(gold))


def f1_score(prediction: str, gold: str) -> float:
    """Token-overlap F1 of the official script (its ``f1_score``, first element)."""
    pred = normalize_answer_official(prediction)
    truth = normalize_answer_official(gold)
    if (pred in SPECIAL_ANSWERS or truth in SPECIAL_ANSWERS) and pred != truth:
        return 0.0
    pred_tokens = pred.split()
    truth_tokens = truth.split()
    common = Counter(pred_tokens) & Counter(truth_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def accuracy(prediction: str, gold: str) -> float:
    truth = normalize_answer_official(gold)
    return float(bool(truth) and truth in normalize_answer_official(prediction))


def _best(metric, prediction: str, golds: Sequence[str]) -> float:
    return max((metric(prediction, gold) for gold in golds), default=0.0)


def best_exact_match(prediction: str, golds: Sequence[str]) -> float:
    return _best(exact_match, prediction, golds)


def best_f1(prediction: str, golds: Sequence[str]) -> float:
    return _best(f1_score, prediction, golds)


def best_accuracy(prediction: str, golds: Sequence[str]) -> float:
    return _best(accuracy, prediction, golds)


def answer_scores(prediction: str, golds: Sequence[str]) -> dict[str, float]:
    """EM, F1 and accuracy of one prediction, each the best over the gold aliases."""
    return {
        "em": best_exact_match(prediction, golds),
        "f1": best_f1(prediction, golds),
        "acc": best_accuracy(prediction, golds),
    }


def retrieval_success(golds: Sequence[str], contexts: Iterable[str]) -> float | None:
    """1.0 if a findable gold answer occurs, on token boundaries, in the contexts; None when no
    gold answer is findable text (yes/no/noanswer, or nothing left after normalization)."""
    findable = [
        truth
        for truth in (normalize_answer_official(gold) for gold in golds)
        if truth and truth not in SPECIAL_ANSWERS
    ]
    if not findable:
        return None
    # Each context on its own (an answer split across two passages was not found), padded so a
    # token-boundary match is a substring match of " gold " in " text ".
    texts = [f" {normalize_answer_official(text)} " for text in contexts]
    return float(any(f" {truth} " in text for truth in findable for text in texts))


def gold_recall(supporting_titles: Iterable[str], retrieved_titles: Iterable[str]) -> float | None:
    """Share of the supporting titles among the retrieved ones (exact titles: dataset titles
    are the paragraph ids of both settings); None when the question names no supporting title."""
    gold = set(supporting_titles)
    if not gold:
        return None
    return len(gold & set(retrieved_titles)) / len(gold)


def hop_recall(gold_hops: Sequence[GoldHop], retrieved_ids: Iterable[str]) -> float | None:
    """Share of the gold hops whose paragraph is among the retrieved passages; None without
    gold hops. Counted per hop, not per paragraph: a chain is only as found as its steps, and
    two hops stated by one paragraph are both found with it. Compared by id, since MuSiQue
    titles do not identify a paragraph."""
    if not gold_hops:
        return None
    retrieved = set(retrieved_ids)
    return sum(hop.passage_id in retrieved for hop in gold_hops) / len(gold_hops)


def unmatched_queries(gold_hops: Sequence[GoldHop], per_query_ids: Sequence[Sequence[str]]) -> int:
    """How many of a plan's queries retrieved no gold hop's paragraph: a decomposition that
    strays from the gold one shows here even when the answer comes out right. Without gold
    hops every query counts as unmatched; callers score only questions that have them."""
    gold = {hop.passage_id for hop in gold_hops}
    return sum(not gold.intersection(ids) for ids in per_query_ids)


def mean_defined(values: Iterable[float | None]) -> float | None:
    """Mean over the values that are defined; None if none is."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None
