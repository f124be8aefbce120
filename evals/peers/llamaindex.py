"""LlamaIndex's multi-step query engine over hoptree's retriever.

``MultiStepQueryEngine`` with ``StepDecomposeQueryTransform``, as LlamaIndex's multi-step
example sets it up, over a ``RetrieverQueryEngine`` (what ``index.as_query_engine`` builds)
whose retriever is hoptree's BM25 through the recording retriever: a ``BaseRetriever`` turning
each hit into a ``TextNode`` (its title as metadata, which LlamaIndex shows the model as
``title: ...``). Each step, the transform asks the model for the next sub-question given the
question and the sub-answers so far (or "None" when there is nothing more to ask, which ends
the loop); the query engine retrieves the top k for it and answers it (compact mode: one call
while the passages fit); after the last step a final call answers the question from the
sub-question/answer pairs. ``num_steps`` is the engine's default, 3. Per question that is
2 calls a step plus the final one: 7 at most, 4 when the second sub-question is "None".

The LLM is LlamaIndex's ``LiteLLM`` (``openai/<model>`` at the metered endpoint, temperature 0,
the run's output cap and timeout, 2 retries; litellm sends ``max_tokens``). Not ``OpenAILike``: its
``llama-index-llms-openai`` requires ``openai<3``, which would downgrade the ``openai`` hoptree
runs on; the request it sends is the same chat completion. The prompt helper gets
``CONTEXT_WINDOW``, the context each of the embedded server's two slots holds, where LlamaIndex
would otherwise assume litellm's 2048 for a model it does not know. The final answer is
LlamaIndex's response text, whitespace-stripped; tiktoken (its prompt helper counts tokens with
``cl100k_base``) and litellm read local files only (``evals.peers.offline``).
"""

from __future__ import annotations

from typing import Any

from evals.peers.base import Peer, PeerAnswer, PeerInstall, PeerQuestion, peer
from evals.peers.offline import local_model_metadata, tiktoken_cache_dir

LLAMA_INDEX_CORE_VERSION = "0.14.20"


def _offline() -> None:
    local_model_metadata()  # before litellm is first imported
    tiktoken_cache_dir(("cl100k_base",))


INSTALL = PeerInstall(
    ("llama_index.core", "llama_index.llms.litellm"),
    f'pip install "hoptree[peers]" (llama-index-core=={LLAMA_INDEX_CORE_VERSION}, '
    "llama-index-llms-litellm)",
    _offline,
)
NUM_STEPS = 3  # MultiStepQueryEngine's default
CONTEXT_WINDOW = 4096  # the embedded server's 8192 over its two slots
INDEX_SUMMARY = "Wikipedia paragraphs, used to answer questions about their subjects"
# the openai client's default (hoptree's too), not LiteLLM's 10: a question cut off by the run's
# time budget leaves its thread running, and ten retries of a timed-out call would hold a slot
MAX_RETRIES = 2


def _engine(q: PeerQuestion) -> Any:
    _offline()
    from llama_index.core import PromptHelper
    from llama_index.core.indices.query.query_transform.base import (
        StepDecomposeQueryTransform,
    )
    from llama_index.core.query_engine import MultiStepQueryEngine, RetrieverQueryEngine
    from llama_index.core.response_synthesizers import get_response_synthesizer
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.llms.litellm import LiteLLM

    class HoptreeRetriever(BaseRetriever):
        """hoptree's BM25 top k as LlamaIndex nodes."""

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            hits = q.retrieve(query_bundle.query_str, q.k)
            return [
                NodeWithScore(
                    node=TextNode(id_=hit.id, text=hit.text, metadata={"title": hit.title}),
                    score=hit.score,
                )
                for hit in hits
            ]

    llm = LiteLLM(
        model=f"openai/{q.model}",
        api_base=q.base_url,
        api_key=q.api_key,
        temperature=0,
        max_tokens=q.max_tokens,
        max_retries=MAX_RETRIES,
        additional_kwargs={"timeout": q.timeout_s},
    )
    helper = PromptHelper(context_window=CONTEXT_WINDOW, num_output=q.max_tokens)
    query_engine = RetrieverQueryEngine.from_args(
        HoptreeRetriever(),
        llm=llm,
        response_synthesizer=get_response_synthesizer(llm=llm, prompt_helper=helper),
    )
    return MultiStepQueryEngine(
        query_engine=query_engine,
        query_transform=StepDecomposeQueryTransform(llm=llm),
        response_synthesizer=get_response_synthesizer(llm=llm, prompt_helper=helper),
        num_steps=NUM_STEPS,
        index_summary=INDEX_SUMMARY,
    )


def run(q: PeerQuestion) -> PeerAnswer:
    response = _engine(q).query(q.question)
    raw = str(response.response or "")
    sub_qa = [[sub, str(answer)] for sub, answer in (response.metadata or {}).get("sub_qa", [])]
    return PeerAnswer(raw.strip(), raw=raw, details={"sub_qa": sub_qa})


PEERS: list[Peer] = [
    peer(
        "peer-llamaindex-multistep",
        f"LlamaIndex {LLAMA_INDEX_CORE_VERSION}'s MultiStepQueryEngine (StepDecompose, "
        f"{NUM_STEPS} steps) over a BM25 retriever query engine",
        INSTALL,
        run,
    )
]
