"""What the corpus modules share: documents cleaned, a validation split held out and kept
disjoint from train, and the short names and digests their cache keys are made of."""

from __future__ import annotations

import datetime
import hashlib
import re

from sweeps.core.errors import DataError

TXT_SEPARATOR = "<|endoftext|>"  # TinyStories' .txt files put this on a line between stories


def hold_out(docs: list[str], val_fraction: float, source: str) -> tuple[list, list]:
    """The last val_fraction of the documents (at least one) become the validation split."""
    n_val = max(1, round(len(docs) * val_fraction))
    if len(docs) - n_val < 1:
        raise DataError(
            f"{source} has {len(docs)} document(s), too few to hold some out for "
            f"validation; give it more stories (in a .txt, separate them with a "
            f"line {TXT_SEPARATOR})"
        )
    return disjoint(docs[:-n_val], docs[-n_val:], source)


def disjoint(train: list[str], val: list[str], source: str) -> tuple[list, list]:
    """Drop validation documents that also occur in train: a duplicate would leak."""
    seen = set(train)
    val = [doc for doc in val if doc not in seen]
    if not val:
        raise DataError(
            f"every validation document of {source} also occurs in its train "
            f"split; use a corpus with more distinct documents"
        )
    return train, val


def clean(texts) -> list[str]:
    """Stripped documents, empty ones dropped (a trailing separator leaves one behind)."""
    return [t.strip() for t in texts if t and t.strip()]


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-")[:40] or "x"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).isoformat(
        timespec="seconds"
    )
