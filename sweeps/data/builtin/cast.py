"""A story's cast and the story being told: characters with pronouns, Zipfian picks,
paragraphs with varied dialogue tags, and small phrase helpers."""

from __future__ import annotations

import functools
import itertools
import random

from sweeps.data.builtin.words import (
    ANIMAL_NAMES,
    ANIMALS,
    BOY_NAMES,
    CHILD_TALENTS,
    DIALOGUE_TAG,
    GIRL_NAMES,
    MANNERS,
    NUMBERS,
    TAG_VERBS,
)


class Character:
    """Someone in a story. Formats as their name, with pronouns as attributes: "{r.his}"."""

    def __init__(self, name: str, kind: str, he: str, talent: str = "kind") -> None:
        self.name, self.kind, self.he, self.talent = name, kind, he, talent
        self.him = "him" if he == "he" else "her"
        self.his = "his" if he == "he" else "her"
        self.He, self.Him, self.His = he.capitalize(), self.him.capitalize(), self.his.capitalize()

    def __format__(self, spec: str) -> str:
        return self.name

    @property
    def child(self) -> bool:
        return self.kind in ("girl", "boy")


class Story:
    """One story being told: its cast, the text so far and a summary of each episode."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.names: set = set()  # only tested for membership, never iterated (set order varies)
        self.paragraphs: list[str] = []
        self.recap: list[str] = []  # one phrase per episode, recalled at the end in order

    def pick(self, seq):
        """One entry, Zipfian like word use in real text: the first is the most common.

        Common words and phrasings are learned early and the long tail late, so further
        training keeps paying off (uniform choices make every word equally rare).
        """
        return self.rng.choices(seq, cum_weights=zipf_cum_weights(len(seq)))[0]

    def child(self) -> Character:
        he = self.rng.choice(("he", "she"))  # even odds: Zipf is for words, not for sexes
        name = self._unused(BOY_NAMES if he == "he" else GIRL_NAMES)
        return Character(name, "boy" if he == "he" else "girl", he, self.pick(CHILD_TALENTS))

    def animal(self, kinds=None) -> Character:
        kind = self.pick(kinds or list(ANIMALS))
        return Character(
            self._unused(ANIMAL_NAMES),
            kind,
            self.rng.choice(("he", "she")),
            ANIMALS.get(kind, "kind"),
        )

    def someone(self) -> Character:
        """A newcomer: two in three are children, the others young animals."""
        return self.child() if self.rng.random() < 0.67 else self.animal()

    def _unused(self, names: list[str]) -> str:
        name = self.pick(names)
        while name in self.names:  # distinct names keep every reference unambiguous
            name = self.pick(names)
        self.names.add(name)
        return name

    def say(self, *sentences: str, **slots) -> None:
        """Append a paragraph: the sentences, formatted with the cast and the given slots."""
        text = " ".join(s for s in sentences if s).format(**self.slots, **slots)
        self.paragraphs.append(DIALOGUE_TAG.sub(self._tag, text))

    def _tag(self, m) -> str:
        """A dialogue tag ('"Hello!" said Tom.') with a verb that fits the punctuation, and
        sometimes a manner: small free choices in almost every paragraph."""
        manner = " " + self.pick(MANNERS) if self.rng.random() < 0.3 else ""
        return f'{m[1]}" {self.pick(TAG_VERBS[m[1]])} {m[3]}{manner}.'


@functools.cache
def zipf_cum_weights(n: int) -> list[float]:
    """Cumulative weights 1, 1 + 1/2, 1 + 1/2 + 1/3, ... of n entries."""
    return list(itertools.accumulate(1 / rank for rank in range(1, n + 1)))


def with_article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def listing(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def introduce(who: Character) -> str:
    """How a newcomer is first named: 'a girl named Mia' or 'a fox named Rusty'."""
    return f"{with_article(who.kind)} named {who.name}"


def count_phrase(n: int, one: str, many: str) -> str:
    return f"{NUMBERS[n]} {one if n == 1 else many}"
