"""What a corpus module declares (sweeps/data/corpora/__init__.py finds each by name)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sweeps.core.config import DataConfig


def _prepares_offline(data: DataConfig) -> bool:
    return True


@dataclass(frozen=True)
class Corpus:
    """One corpus: its name (the module's, and data.corpus's value), its documents as
    (train_docs, val_docs) that never share a document, its source as the cache manifest records
    it (`describe`: its `key` names the cache directory and changes whenever the documents
    could), the banner a report opens with (`banner`: it says what the findings are about), and
    whether preparing its tokens can run without a network (`offline`; the dry run's hint and
    the offline loader read it, and `network` names what it reaches)."""

    name: str
    load: Callable[[DataConfig], tuple[list[str], list[str]]]
    describe: Callable[[DataConfig], dict]
    banner: Callable[[DataConfig], str]
    offline: Callable[[DataConfig], bool] = _prepares_offline
    prepare_note: str = ""  # how long preparing takes, where worth saying (the dry run's hint)
    network: str = "the network"  # what preparing reaches where `offline` says it must
    # whether a quick look (`config show`'s probe batch, sweeps.data.cache.offline_tokens) may
    # prepare it on the spot: False where preparing is long (a whole TinyStories copy) or needs
    # the network; such a corpus is read there only from a cache already prepared
    prepare_in_passing: bool = True
