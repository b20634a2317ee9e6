"""A whole story: the cast, the opening, one to five episodes, then bedtime or a closing."""

from __future__ import annotations

import random

from sweeps.data.builtin.cast import Story, introduce, with_article
from sweeps.data.builtin.episodes import EPISODES, bedtime_episode, closing
from sweeps.data.builtin.words import (
    COLOURS,
    DAYS,
    FOODS,
    LATER,
    PETS,
    SKILL_WORDS,
    TOWNS,
    TOYS,
    TRAITS,
)


def generate_stories(n_stories: int = 20000, seed: int = 0) -> list[str]:
    """n_stories stories (ASCII text), the same list for the same (n_stories, seed)."""
    rng = random.Random(seed)
    return [_story(rng) for _ in range(n_stories)]


def _story(rng: random.Random) -> str:
    s = Story(rng)
    _cast(s)
    _opening(s)
    # Short stories are common, long ones rarer: 1 to 5 episodes, each plot at most once.
    n = rng.choices((1, 2, 3, 4, 5), weights=(60, 24, 10, 4, 2))[0]
    plots = rng.sample(EPISODES, n)
    bedtime = rng.random() < 0.35
    for i, plot in enumerate(plots):
        s.when = s.pick(DAYS).join(("One ", " morning,")) if i == 0 else s.pick(LATER)
        plot(s)
    if bedtime:
        bedtime_episode(s)
    else:
        closing(s)
    return "\n\n".join(s.paragraphs)


def _cast(s: Story) -> None:
    rng = s.rng
    s.hero = s.child() if rng.random() < 0.75 else s.animal()
    s.friend = s.someone()
    s.pet = s.animal(list(PETS)) if s.hero.child and rng.random() < 0.6 else None
    # Grown-ups: an animal hero's family is named after its kind ("Mama Fox").
    if s.hero.child:
        s.adult = s.pick(("Mom", "Dad", "Grandma", "Grandpa"))
    else:
        s.adult = s.pick(("Mama", "Papa", "Granny")) + " " + s.hero.kind.capitalize()
    s.toy = s.pick(COLOURS) + " " + s.pick(TOYS)
    s.colour, s.food = s.pick(COLOURS[:10]), s.pick(FOODS)
    s.slots = {
        "hero": s.hero,
        "friend": s.friend,
        "pet": s.pet,
        "adult": s.adult,
        "toy": s.toy,
        "colour": s.colour,
        "food": s.food,
    }


def _opening(s: Story) -> None:
    hero, rng = s.hero, s.rng
    trait = s.pick(TRAITS)
    first = s.pick(
        [
            "Once upon a time, there was {a_trait} {hero.kind} named {hero}.",
            "Once upon a time, in {town}, there lived {a_trait} {hero.kind} named {hero}.",
            "There once was {a_trait} {hero.kind} named {hero} who lived in {town}.",
            "{hero} was {a_trait} {hero.kind} who lived in {town}.",
        ]
    )
    facts = [
        s.pick(
            ["{hero.His} favourite colour was {colour}.", "{hero.He} loved the colour {colour}."]
        ),
        s.pick(
            ["More than anything, {hero.he} loved {food}.", "{hero.His} favourite food was {food}."]
        ),
        s.pick(
            [
                "{hero.He} had {a_toy} that {hero.he} took everywhere.",
                "{hero.His} best toy was {a_toy}.",
            ]
        ),
    ]
    rng.shuffle(facts)  # the same facts in any order: which comes first carries no signal
    s.skill_told = rng.random() < 0.5  # only a told skill can be remembered in _helping
    if s.skill_told:
        facts.append("{hero} was very good at " + SKILL_WORDS[hero.talent] + ".")
    s.say(first, *facts, a_trait=with_article(trait), town=s.pick(TOWNS), a_toy=with_article(s.toy))
    second = [
        "{hero.His} best friend was " + introduce(s.friend) + ".",
        s.pick(
            [
                "{friend} lived next door.",
                "{friend} lived across the street.",
                "They did everything together.",
                "{friend} was always laughing.",
            ]
        ),
    ]
    if s.pet:
        second.append(
            s.pick(
                [
                    "{hero} also had a pet {pet.kind} called {pet}.",
                    "{hero} had a {pet.kind} named {pet}, who followed {hero.him} everywhere.",
                ]
            )
        )
    s.say(*second)
