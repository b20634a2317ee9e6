"""Data found early: whether each corpus/tokenizer split a sweep needs is in the cache, and
the exact command that prepares it, said by `sweep --dry-run` and `--estimate` before any
work (a sweep would otherwise find a missing TinyStories only when its first run starts).
"""

from __future__ import annotations

from sweeps.core.errors import DataError


def needed_splits(configs) -> list:
    """The distinct DataConfigs of the planned runs, in plan order."""
    return list(dict.fromkeys(cfg.data for cfg in configs))


def data_lines(configs, program: str = "qkmlx") -> list[str]:
    """One line per split: prepared, or not and how to prepare it (with `program`)."""
    from sweeps.data.cache import cache_path, is_prepared, prepare_command
    from sweeps.data.corpora import corpus

    lines = []
    for data in needed_splits(configs):
        what = f"{data.corpus} corpus, tokenizer {data.tokenizer}"
        try:
            if is_prepared(data):
                lines.append(f"  data: {what}: prepared ({cache_path(data)})")
                continue
        except DataError as e:  # e.g. data.path names no file
            lines.append(f"  data: {what}: {e}")
            continue
        found = corpus(data.corpus)
        if not found.offline(data):
            how = f"needs {found.network} once: run"
        elif found.prepare_note:
            how = f"the sweep prepares it first ({found.prepare_note}), or run"
        else:
            how = "the sweep prepares it first, or run"
        lines.append(f"  data: {what}: NOT prepared; {how} `{prepare_command(data, program)}`")
    return lines
