"""How much a comment's word says: boilerplate words weigh like stop words (issue #17, ADR 0031).

A catalog's comments are written by a few hands in a few formulas ("Primary key.", "Foreign key to
Product.ProductID.", "Date and time the record was last updated.", "Unique identifier for each venue"). A
word that many of the catalog's comments repeat says about the table holding it what a stop word says: its
comment match is scaled by the word's rarity among comments. The statistic is the catalog's own and global:
comment-document frequency, one document per commented column or table; no word list.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

COMMON_SHARE = 0.01  # a word in at most this share of the comment documents counts fully ...
COMMON_MIN = 5  # ... or in at most this many (a small catalog's few comments are all specific)


def boilerplate(words: np.ndarray[Any, Any], documents: np.ndarray[Any, Any], n_words: int) -> np.ndarray[Any, Any]:
    """Per word number, the factor its comment matches are scaled by: 1 for a word in at most B =
    max(COMMON_MIN, COMMON_SHARE x N) of the N comment documents, else ln(N / count) / ln(N / B), so a word
    in every comment counts nothing. ``words`` and ``documents`` are the comment rows, each (word, document)
    once (a comment's keys are a set)."""
    factor = np.ones(n_words, dtype=np.float64)
    if not len(words):
        return factor
    n = int(np.count_nonzero(np.bincount(documents)))
    bound = max(float(COMMON_MIN), COMMON_SHARE * n)
    if n <= bound:
        return factor
    counts = np.bincount(words, minlength=n_words).astype(np.float64)
    common = counts > bound
    factor[common] = np.log(n / counts[common]) / math.log(n / bound)
    return factor
