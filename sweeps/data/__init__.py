"""Data: corpora -> tokenizers -> cached token arrays -> deterministic batches.

- corpora.py: a DataConfig's documents (builtin, tinystories, file) as train/val splits;
- builtin.py: the synthetic story generator behind the builtin corpus;
- tokenizers.py: documents -> flat token ids (bytes, gpt2, the gpt2-compact map);
- cache.py: token splits prepared once per (corpus, tokenizer) and verified on every load;
- batches.py: batches as a pure function of (seed, step), and token entropies.
"""
from sweeps.data.batches import entropies, get_batch, val_batches
from sweeps.data.cache import TokenSplits, cache_path, load_tokens, read_manifest

__all__ = ["TokenSplits", "cache_path", "entropies", "get_batch", "load_tokens",
           "read_manifest", "val_batches"]
