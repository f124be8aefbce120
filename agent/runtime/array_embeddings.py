"""The part of langchain-core's ``Embeddings`` that every hoptree backend shares.

A backend implements one method, ``embed_array`` (texts -> float32 matrix of unit vectors, the
form FAISS and the tree want); the list-of-floats and async forms langchain expects follow from
it here, once, with the blocking work moved off the event loop.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod

import numpy as np
from langchain_core.embeddings import Embeddings


class ArrayEmbeddings(Embeddings):
    @abstractmethod
    def embed_array(self, texts: list[str], *, show_progress: bool = False) -> np.ndarray:
        """float32 matrix (n, dim) of unit vectors, rows in the order of ``texts``."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)
