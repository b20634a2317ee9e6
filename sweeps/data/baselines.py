"""What counting alone achieves on a token split: the loss of the best unigram and bigram
models of it, in nats per token of its tokenizer (plug-in entropies from counts).

The bigram baseline is H(next | current) of the train split: the train loss of the
maximum-likelihood bigram model. A run whose final validation loss is worse has learned
less than counting token pairs (docs/STUDY.md calls it unstable). Computed once per
tokenized dataset and stored in its cache manifest.
"""

from __future__ import annotations

import math

import numpy as np

CHUNK = 1 << 24  # tokens counted at a time: bounded memory on a large corpus
DENSE_PAIRS = 1 << 26  # vocabularies up to 8192 ids count pairs in a dense table


def split_baselines(tokens: np.ndarray, vocab_size: int) -> dict:
    """{"unigram_nats", "bigram_nats", "tokens"} of a flat token array."""
    unigram, current, pairs = _counts(np.asarray(tokens), vocab_size)
    return {
        "unigram_nats": _entropy(unigram),
        "bigram_nats": _entropy(pairs) - _entropy(current),
        "tokens": int(len(tokens)),
    }


def entropies(tokens: np.ndarray, vocab_size: int) -> dict:
    """The same in bits per token: unigram entropy and H(next | current)."""
    b = split_baselines(tokens, vocab_size)
    return {
        "unigram_bits": b["unigram_nats"] / math.log(2),
        "bigram_bits": b["bigram_nats"] / math.log(2),
        "tokens": b["tokens"],
    }


def _counts(tokens: np.ndarray, vocab_size: int):
    """Counts of each id, of each id as the first of a pair, and of each pair (id, next id)."""
    dense = vocab_size * vocab_size <= DENSE_PAIRS
    unigram = np.zeros(vocab_size, np.int64)
    current = np.zeros(vocab_size, np.int64)
    pairs = np.zeros(vocab_size * vocab_size if dense else 0, np.int64)
    sparse = []
    for start in range(0, len(tokens), CHUNK):
        unigram += np.bincount(np.asarray(tokens[start : start + CHUNK]), minlength=vocab_size)
    for start in range(0, len(tokens) - 1, CHUNK):
        ids = np.asarray(tokens[start : start + CHUNK + 1], dtype=np.int64)  # + 1: the next id
        current += np.bincount(ids[:-1], minlength=vocab_size)
        codes = ids[:-1] * vocab_size + ids[1:]
        if dense:
            pairs += np.bincount(codes, minlength=vocab_size * vocab_size)
        else:
            sparse.append(np.unique(codes, return_counts=True))
    if not dense:
        codes = np.concatenate([c for c, _ in sparse])
        counts = np.concatenate([n for _, n in sparse])
        order = np.argsort(codes, kind="stable")
        codes, counts = codes[order], counts[order]
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        pairs = np.add.reduceat(counts, starts)
    return unigram, current, pairs


def _entropy(counts: np.ndarray) -> float:
    counts = counts[counts > 0]
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())
