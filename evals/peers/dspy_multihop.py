"""DSPy's multi-hop question answering program, zero-shot, on hoptree's model and retriever.

The program is the one DSPy's tutorials write for HotpotQA (``SimplifiedBaleen``): per hop a
``ChainOfThought`` writes a search query from the question and the passages gathered so far,
the retriever adds its top k (deduplicated), and after the last hop a ``ChainOfThought``
answers with "short factoid answers" from all of them. Two hops, as there. Retrieval is a plain
Python function, as DSPy 3's tutorials pass theirs, returning ``"title | text"`` strings (the
format of DSPy's Wikipedia abstracts corpus); it is hoptree's BM25 through the recording
retriever.

Nothing is compiled: no optimizer, no demonstrations, so each predictor sends DSPy's own
zero-shot prompt (its ``ChatAdapter`` format). Per question that is three model calls when every
reply parses (query, query, answer); a reply that does not parse makes DSPy retry that call in
its JSON format, one more call each.

The model is ``dspy.LM("openai/<model>")`` at the metered endpoint, temperature 0, the run's
output cap, DSPy's cache off, set per question with ``dspy.context`` (thread-local, so two
questions can run at a time). DSPy sends the cap as ``max_completion_tokens``, which llama.cpp's
server (hoptree's embedded one included) reads as an alias of ``n_predict``.
"""

from __future__ import annotations

from typing import Any

from evals.peers.base import Peer, PeerAnswer, PeerInstall, PeerQuestion, peer
from evals.peers.offline import local_model_metadata

DSPY_VERSION = "3.4.1"
INSTALL = PeerInstall(
    ("dspy",), f'pip install "hoptree[peers]" (dspy=={DSPY_VERSION})', local_model_metadata
)
MAX_HOPS = 2


def _program(retrieve: Any) -> Any:
    """DSPy's multi-hop program with ``retrieve(query) -> list[str]`` as its search."""
    import dspy
    from dspy.dsp.utils import deduplicate

    class GenerateAnswer(dspy.Signature):
        """Answer questions with short factoid answers."""

        context = dspy.InputField(desc="may contain relevant facts")
        question = dspy.InputField()
        answer = dspy.OutputField(desc="often between 1 and 5 words")

    class GenerateSearchQuery(dspy.Signature):
        """Write a simple search query that will help answer a complex question."""

        context = dspy.InputField(desc="may contain relevant facts")
        question = dspy.InputField()
        query = dspy.OutputField()

    class SimplifiedBaleen(dspy.Module):
        def __init__(self, max_hops: int = MAX_HOPS) -> None:
            super().__init__()
            self.generate_query = [
                dspy.ChainOfThought(GenerateSearchQuery) for _ in range(max_hops)
            ]
            self.generate_answer = dspy.ChainOfThought(GenerateAnswer)
            self.max_hops = max_hops

        def forward(self, question: str) -> Any:
            context: list[str] = []
            for hop in range(self.max_hops):
                query = self.generate_query[hop](context=context, question=question).query
                context = deduplicate(context + retrieve(query))
            pred = self.generate_answer(context=context, question=question)
            return dspy.Prediction(context=context, answer=pred.answer, reasoning=pred.reasoning)

    return SimplifiedBaleen()


def run(q: PeerQuestion) -> PeerAnswer:
    local_model_metadata()  # DSPy would fetch litellm's model map at the first call
    import dspy

    def search(query: str) -> list[str]:
        return [f"{hit.title} | {hit.text}" for hit in q.retrieve(query, q.k)]

    lm = dspy.LM(
        f"openai/{q.model}",
        api_base=q.base_url,
        api_key=q.api_key,
        temperature=0,
        max_tokens=q.max_tokens,
        timeout=q.timeout_s,
        cache=False,
    )
    with dspy.context(lm=lm):
        pred = _program(search)(question=q.question)
    answer = str(pred.answer or "")
    return PeerAnswer(answer, raw=answer, details={"reasoning": str(pred.reasoning or "")})


PEERS: list[Peer] = [
    peer(
        "peer-dspy-multihop",
        f"DSPy {DSPY_VERSION}'s multi-hop program (SimplifiedBaleen: {MAX_HOPS} hops of "
        "ChainOfThought query + BM25 top k, ChainOfThought answer), zero-shot",
        INSTALL,
        run,
    )
]
