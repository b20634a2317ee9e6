"""What figures/words says of a decision, typed: a verdict with its reason in words, and a
hypothesis's verdict with its claim, its test, the evidence and each rung's words. Never
written to disk: the report and the terminal word them again from the typed analysis."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Worded:
    """A decision in words: the verdict (a sweeps.study code) and the reason with its numbers."""

    verdict: str
    reason: str


@dataclass(frozen=True)
class Verdict(Worded):
    """A registered hypothesis's verdict in words (figures/words/verdicts.py): its claim and
    test (figures/words/hypotheses.py), the evidence lines, and each rung's verdict and reason
    (`per_depth`, keyed by rung: a depth or a width)."""

    hypothesis: str = ""
    claim: str = ""
    test: str = ""
    evidence: list[str] = field(default_factory=list)
    per_depth: dict[str, Worded] = field(default_factory=dict)
