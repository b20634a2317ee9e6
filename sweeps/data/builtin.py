"""A synthetic children's-story corpus that needs no network (labelled synthetic wherever shown).

The stories have structure a small model can learn beyond word frequencies: a fixed cast
whose kind, pronoun and talent never change, and a plot (a child wants to play with a
thing, a mishap, a helper, a resolution) in which the mishap decides which talent solves it,
so the helper's kind and actions depend on a sentence several lines earlier. Formulaic
openings and endings repeat; optional sentences and synonym slots add variation.

Stories come from one seeded random stream in order, so the first n stories of a larger
corpus equal the corpus of n stories with the same seed.
"""
from __future__ import annotations

import random

# Bump whenever the output for a given (n_stories, seed) changes: it is part of the cache key.
GENERATOR_VERSION = 1

# (name, kind, pronoun, talent). A talent fixes how a character helps (see MISHAPS).
CAST = [
    ("Lily", "girl", "she", "fix"), ("Mia", "girl", "she", "kind"),
    ("Sara", "girl", "she", "climb"), ("Emma", "girl", "she", "fix"),
    ("Lucy", "girl", "she", "kind"), ("Anna", "girl", "she", "climb"),
    ("Zoe", "girl", "she", "kind"), ("Ella", "girl", "she", "fix"),
    ("Amy", "girl", "she", "climb"), ("Rosa", "girl", "she", "kind"),
    ("Tom", "boy", "he", "climb"), ("Ben", "boy", "he", "fix"),
    ("Sam", "boy", "he", "kind"), ("Max", "boy", "he", "climb"),
    ("Tim", "boy", "he", "fix"), ("Jack", "boy", "he", "kind"),
    ("Leo", "boy", "he", "climb"), ("Joe", "boy", "he", "fix"),
    ("Finn", "boy", "he", "kind"), ("Noah", "boy", "he", "fix"),
    ("Spot", "dog", "he", "sniff"), ("Rex", "dog", "he", "sniff"),
    ("Daisy", "dog", "she", "sniff"), ("Buddy", "dog", "he", "sniff"),
    ("Kitty", "cat", "she", "climb"), ("Tiger", "cat", "he", "climb"),
    ("Pip", "bird", "he", "fly"), ("Tweety", "bird", "she", "fly"),
    ("Hoot", "owl", "he", "fly"), ("Sunny", "bird", "she", "fly"),
    ("Bruno", "bear", "he", "strong"), ("Bella", "bear", "she", "strong"),
    ("Dumbo", "elephant", "he", "strong"), ("Gus", "horse", "he", "strong"),
    ("Quack", "duck", "he", "swim"), ("Dotty", "duck", "she", "swim"),
    ("Freddy", "frog", "he", "swim"), ("Fin", "fish", "he", "swim"),
    ("Hoppy", "bunny", "she", "sniff"), ("Nutty", "squirrel", "he", "climb"),
    ("Molly", "mouse", "she", "small"), ("Squeak", "mouse", "he", "small"),
]
CHILDREN = [c for c in CAST if c[1] in ("girl", "boy")]

PLACES = ["park", "garden", "forest", "beach", "farm", "yard", "meadow", "hill", "pond",
          "playground", "woods", "field"]
THINGS = ["ball", "kite", "hat", "toy car", "doll", "boat", "book", "teddy bear", "drum",
          "stone", "bucket", "cup", "train", "flower crown"]
ADJECTIVES = ["little", "happy", "kind", "curious", "brave", "small", "cheerful", "playful"]
THING_ADJECTIVES = ["red", "big", "new", "shiny", "soft", "little", "blue", "yellow", "old"]
ACTIVITIES = ["run and jump", "sing songs", "play outside", "look at the clouds",
              "pick flowers", "draw pictures", "build things", "play with friends"]
WEATHER = ["The sun was shining and the sky was blue.", "It was a warm and sunny day.",
           "The wind was blowing softly.", "Birds were singing in the trees.",
           "There were big white clouds in the sky."]

# Mishap -> (what happens, the child's cry for help, the talents that can solve it).
MISHAPS = {
    "tree": ("the wind blew the {thing} up into a tall tree",
             "My {thing} is stuck in the tree!", ("climb", "fly")),
    "roof": ("the {thing} landed on top of the roof of the old shed",
             "My {thing} is up on the roof!", ("climb", "fly")),
    "lost": ("{pro} could not find the {thing} anywhere. It was lost in the tall grass",
             "I lost my {thing}!", ("sniff",)),
    "broken": ("the {thing} fell on a rock and broke into two pieces",
               "My {thing} is broken!", ("fix",)),
    "water": ("the {thing} fell into the water and floated away",
              "My {thing} is in the water!", ("swim",)),
    "rock": ("the {thing} rolled under a big heavy rock",
             "My {thing} is under the big rock!", ("strong",)),
    "hole": ("the {thing} fell into a tiny hole in the ground",
             "My {thing} fell into a tiny hole!", ("small",)),
    "sad": ("a big dog barked and {pro} dropped the {thing} in the mud",
            "My {thing} is all dirty and I am scared!", ("kind",)),
}

# Talent -> what the helper does. {h} helper, {hp} helper pronoun, {hposs} helper possessive.
RESCUES = {
    "climb": ["{h} climbed up, one step at a time. {Hp} grabbed the {thing} and climbed "
              "back down.", "{h} said, \"I am good at climbing!\" {Hp} climbed up and got "
              "the {thing}."],
    "fly": ["{h} flew up high, took the {thing} and brought it down.",
            "{h} flapped {hposs} wings and flew up. {Hp} picked up the {thing} and flew back."],
    "sniff": ["{h} sniffed the ground. Sniff, sniff! Soon {hp} found the {thing} and "
              "brought it back.", "{h} put {hposs} nose to the grass and sniffed and sniffed. "
              "{Hp} found the {thing}!"],
    "fix": ["{h} got some glue and fixed the {thing}. It was as good as new.",
            "{h} said, \"I can fix it!\" {Hp} worked very hard and fixed the {thing}."],
    "swim": ["{h} jumped into the water and swam to the {thing}. {Hp} pushed it back to "
             "the shore.", "{h} said, \"I can swim!\" {Hp} swam fast and brought back "
             "the {thing}."],
    "strong": ["{h} was very strong. {Hp} pushed the big rock away and there was the {thing}.",
               "{h} said, \"I am strong!\" {Hp} lifted the rock and got the {thing}."],
    "small": ["{h} was very small. {Hp} went down into the hole and came back with the "
              "{thing}.", "{h} said, \"I am small, I can go in!\" {Hp} crawled into the hole "
              "and got the {thing}."],
    "kind": ["{h} gave {name} a big hug and said, \"Do not be scared. We can wash it "
             "together.\" They washed the {thing} until it was clean.",
             "{h} held {poss} hand and said, \"It is okay.\" Together they cleaned the {thing}."],
}

OPENINGS = [  # the classic opening twice: it is the most common one, as in TinyStories
    "Once upon a time, there was a {adj} {kind} named {name}.",
    "Once upon a time, there was a {adj} {kind} named {name}.",
    "Once upon a time, in a small town, there lived a {adj} {kind} named {name}.",
    "There once was a {adj} {kind} named {name} who lived near the {place}.",
]
ENDINGS = [
    "From that day on, {name} and {h} were best friends.",
    "{name} and {h} played together in the {place} until the sun went down.",
    "{name} learned that it is good to ask for help.",
    "{name} learned that friends help each other.",
    "After that, {name} always took good care of {poss} {thing}.",
]
POSSESSIVE = {"he": "his", "she": "her"}
# What a character with each talent can do, said by a passer-by who cannot help.
CAN_DO = {"climb": "climb", "fly": "fly", "sniff": "find lost things", "fix": "fix things",
          "swim": "swim", "strong": "lift heavy things", "small": "fit into small holes"}


def generate_stories(n_stories: int = 20000, seed: int = 0) -> list[str]:
    """n_stories stories (ASCII text), the same list for the same (n_stories, seed)."""
    rng = random.Random(seed)
    return [_story(rng) for _ in range(n_stories)]


def _story(rng: random.Random) -> str:
    name, kind, pro, _ = rng.choice(CHILDREN)
    what, cry, talents = MISHAPS[rng.choice(list(MISHAPS))]
    helpers = [c for c in CAST if c[3] in talents and c[0] != name]
    h, h_kind, h_pro, talent = rng.choice(helpers)
    slots = {"name": name, "kind": kind, "pro": pro, "Pro": pro.capitalize(),
             "poss": POSSESSIVE[pro], "Poss": POSSESSIVE[pro].capitalize(),
             "h": h, "h_kind": h_kind, "hp": h_pro, "Hp": h_pro.capitalize(),
             "hposs": POSSESSIVE[h_pro], "thing": rng.choice(THINGS),
             "place": rng.choice(PLACES), "adj": rng.choice(ADJECTIVES),
             "thing_adj": rng.choice(THING_ADJECTIVES), "activity": rng.choice(ACTIVITIES)}

    setup = [rng.choice(OPENINGS), "{Pro} loved to {activity}."]
    if rng.random() < 0.5:
        setup.append("{name} had a {thing_adj} {thing}. {Pro} loved it very much.")
    else:
        setup.append("{Poss} mom gave {name} a {thing_adj} {thing}, and {pro} loved it.")
    setup.append("One day, {name} took the {thing} to the {place} to play.")

    problem = [rng.choice(WEATHER)] if rng.random() < 0.5 else []
    problem.append("But then, " + what + ".")
    problem.append(rng.choice(["{name} was very sad.", "{name} felt sad and began to cry.",
                               "{name} did not know what to do."]))
    if rng.random() < 0.4:
        problem.append("{Pro} tried and tried, but {pro} could not get the {thing}.")
    if rng.random() < 0.3:  # a passer-by whose talent does not fit the mishap
        w, w_kind, w_pro, w_talent = rng.choice(
            [c for c in CAST if c[3] not in talents and c[3] in CAN_DO and c[0] != name])
        problem.append(f"First, {w} the {w_kind} came by. \"I am sorry, I cannot "
                       f"{CAN_DO[w_talent]},\" {w_pro} said, and went away.")
    problem.append("Just then, {h} the {h_kind} came by.")
    problem.append("{h} asked, \"Why are you sad, {name}?\"")
    problem.append("{name} said, \"" + cry + "\"")
    problem.append(rng.choice(RESCUES[talent]))

    ending = [rng.choice(["{name} was so happy. \"Thank you, {h}!\" {pro} said.",
                          "{name} smiled a big smile. \"Thank you, {h}!\"",
                          "\"Thank you, {h}!\" said {name}. {Pro} gave {h} a big hug."]),
              rng.choice(ENDINGS)]
    return "\n\n".join(" ".join(p) for p in (setup, problem, ending)).format(**slots)
