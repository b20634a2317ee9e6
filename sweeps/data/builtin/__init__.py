"""A synthetic children's-story corpus that needs no network (labelled synthetic wherever shown).

Every story is made up by this package from word lists and sentence templates; none is
written by a person or taken from a dataset. A story introduces a small cast (a child or
young animal as the hero, with a character trait, a favourite colour, food and toy, a best
friend, often a pet and a grown-up) and then tells one to five episodes of eleven kinds:
a lost toy found again, sharing a snack, a trip, a race, hide and seek, cooking, a rainy
day, helping a friend out of a mishap, a lesson learned, growing a garden, and a bedtime
story. Stories run from a few hundred to a few thousand bytes, with dialogue throughout.

Randomness is everywhere (names, words, counts, orders, optional sentences), but so is
structure a model can only learn by looking back, often paragraphs back:
- names, kinds, pronouns and the hero's favourites, toy and pet are fixed at the start and
  reused consistently (a pet's kind decides its sound; the grown-ups of an animal hero are
  named after its kind);
- lists recur in the same order: the places visited and the one where the toy was put
  down (it is found there), a recipe's ingredients and the steps that use them, the things
  packed for a trip and their later use, where each child hid and where each is found, the
  finishing order of a race and its prizes, the episodes of the story in the final recap;
- counts are kept: snacks shared one friend at a time, seeds planted and shoots that come
  up, a hide-and-seek count;
- resolutions depend on earlier facts: a grown-up's warning and what happens when it is
  forgotten (the warning is quoted back), which talent can solve which mishap.

Stories come from one seeded random stream in order, so the first n stories of a larger
corpus equal the corpus of n stories with the same seed.
"""

from sweeps.data.builtin.story import generate_stories

# Bump whenever the output for a given (n_stories, seed) changes: it is part of the cache key.
GENERATOR_VERSION = 2


__all__ = ["GENERATOR_VERSION", "generate_stories"]
