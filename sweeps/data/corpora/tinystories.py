"""The `tinystories` corpus: the dataset's own train and validation splits, from the Hugging
Face hub (roneneldan/TinyStories) or a local copy of it (data.path). Reaching the hub is probed
first, so a machine without a network fails at once with the command that prepares the split
(or loads from the datasets cache) instead of waiting out the hub client's retries."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.data.corpora._corpus import Corpus
from sweeps.data.corpora._text import clean, digest, disjoint, slug

TINYSTORIES_REPO = "roneneldan/TinyStories"
HUB_LAYOUT = "DIR/data/train-*.parquet and DIR/data/validation-*.parquet with a text column"
# One connection to the hub (or the proxy that reaches it) within this many seconds, else the
# load runs offline: from the datasets cache, or failing at once, instead of the hub client's
# retries (about 24 s with no network).
HUB_PROBE_TIMEOUT_S = 3.0
OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")  # what the hub client reads
TRUE_VALUES = {"1", "on", "yes", "true"}


class HubUnreachable(DataError):
    """The hub could not be reached: sweeps.data.cache.load_tokens names the command that
    prepares the split the run needs (with its tokenizer) once the network is back."""

    def __init__(self, repo: str, prepare: str = "qkmlx data prepare --corpus tinystories"):
        self.repo = repo
        super().__init__(
            f"cannot reach the Hugging Face hub for {repo}: run `{prepare}` once "
            f"with network access, or pass --set data.path=DIR with a local copy "
            f"({HUB_LAYOUT})"
        )


def _load_tinystories(path: str) -> tuple[list[str], list[str]]:
    """The dataset's train and validation splits, from the hub or a local copy (data.path).
    From the hub: offline (the datasets cache, or HubUnreachable at once) when the user set
    HF_HUB_OFFLINE, or when hub_reachable finds no way to the hub (HF_HUB_OFFLINE=0 skips it)."""
    repo = str(_existing_dir(path)) if path else TINYSTORIES_REPO
    import datasets

    setting = offline_setting()
    offline = not path and (setting or (setting is None and not hub_reachable()))
    try:
        with offline_mode() if offline else contextlib.nullcontext():
            splits = [datasets.load_dataset(repo, split=s) for s in ("train", "validation")]
    except ConnectionError:
        raise HubUnreachable(repo) from None
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetNotFoundError) as e:
        if offline:  # offline, and the datasets cache does not hold it
            raise HubUnreachable(repo) from None
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(
            f"cannot load tinystories from {repo} ({reason}); a local copy needs {HUB_LAYOUT}"
        ) from None
    for split in splits:
        if "text" not in split.column_names:
            raise DataError(
                f"tinystories at {repo} has no 'text' column (columns: "
                f"{', '.join(split.column_names)}); a local copy needs {HUB_LAYOUT}"
            )
    train, val = (clean(split["text"]) for split in splits)
    if not train or not val:
        raise DataError(f"tinystories at {repo} has an empty train or validation split")
    return disjoint(train, val, repo)


def offline_setting() -> bool | None:
    """The user's offline setting (HF_HUB_OFFLINE, or HF_DATASETS_OFFLINE): True, False when
    set to anything else (0: online, no probe), None when neither is set."""
    values = [os.environ[k].strip().lower() for k in OFFLINE_VARS if os.environ.get(k)]
    return any(v in TRUE_VALUES for v in values) if values else None


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether one TCP connection to the hub (HF_ENDPOINT, default huggingface.co), or to the
    proxy the environment routes it through, opens within timeout seconds."""
    endpoint = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    scheme, host = endpoint.scheme or "https", endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        via = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = via.hostname or host, via.port or 8080
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except (OSError, ValueError):
        return False
    return True


@contextlib.contextmanager
def offline_mode():
    """The hub client offline while the block runs: the environment (read when datasets and
    huggingface_hub are first imported) and the flags of those already imported."""
    saved = {k: os.environ.get(k) for k in OFFLINE_VARS}
    os.environ.update({k: "1" for k in OFFLINE_VARS})
    flags = [
        (module, name)
        for module in (
            sys.modules.get("huggingface_hub.constants"),
            sys.modules.get("datasets.config"),
        )
        if module is not None
        for name in OFFLINE_VARS
        if isinstance(getattr(module, name, None), bool)
    ]
    before = [getattr(module, name) for module, name in flags]
    for module, name in flags:
        setattr(module, name, True)
    try:
        yield
    finally:
        for (module, name), value in zip(flags, before):
            setattr(module, name, value)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _existing_dir(path: str) -> Path:
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise DataError(
            f"tinystories data.path {p} is not a directory; pass a local copy of "
            f"the hub dataset ({HUB_LAYOUT})"
        )
    return p


def load(data: DataConfig) -> tuple[list[str], list[str]]:
    return _load_tinystories(data.path)


def describe(data: DataConfig) -> dict:
    if not data.path:
        return {
            "corpus": "tinystories",
            "repo": TINYSTORIES_REPO,
            "key": f"tinystories-{slug(TINYSTORIES_REPO)}",
        }
    root = _existing_dir(data.path)
    # Every file's size and mtime: replacing a local copy's contents changes the key.
    stats = sorted(
        f"{p.relative_to(root)}|{p.stat().st_size}|{p.stat().st_mtime_ns}"
        for p in root.rglob("*")
        if p.is_file()
    )
    return {
        "corpus": "tinystories",
        "path": str(root),
        "key": f"tinystories-{slug(root.name)}-{digest(str(root) + ''.join(stats))}",
    }


def banner(data: DataConfig) -> str:
    return "> **Real text: TinyStories** (its own train and validation splits)."


# preparing from the hub needs the network once; a local copy (data.path) does not
CORPUS = Corpus(
    "tinystories",
    load,
    describe,
    banner,
    offline=lambda data: bool(data.path),
    network="the Hugging Face hub",
    prepare_in_passing=False,
)
