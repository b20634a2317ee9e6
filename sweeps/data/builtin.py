"""A synthetic children's-story corpus that needs no network (labelled synthetic wherever shown).

Every story is made up by this module from word lists and sentence templates; none is
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
from __future__ import annotations

import functools
import itertools
import random
import re

# Bump whenever the output for a given (n_stories, seed) changes: it is part of the cache key.
GENERATOR_VERSION = 2

# -- words -----------------------------------------------------------------------------------

NUMBERS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
           "eleven", "twelve"]
COUNTING = ["", "One", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
            "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
            "eighteen", "nineteen", "twenty"]
ORDINALS = ["", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]

GIRL_NAMES = [
    "Lily", "Mia", "Sara", "Emma", "Lucy", "Anna", "Zoe", "Ella", "Amy", "Rosa", "Ava", "Chloe",
    "Grace", "Hannah", "Isla", "Ivy", "Julia", "Kate", "Layla", "Maya", "Nora", "Olivia",
    "Ruby", "Sophie", "Tara", "Una", "Vera", "Willa", "Yara", "Alice", "Bella", "Clara",
    "Eva", "Fiona", "Gemma", "Holly", "Iris", "Jade", "Kira", "Lena", "Maria", "Nina", "Olive",
    "Poppy", "Rita", "Stella", "Tess", "Violet", "Wendy", "Abby", "Beth", "Cora", "Dora",
    "Elsie", "Freya", "Gina", "Hazel", "Megan", "Nell", "Pia",
]
BOY_NAMES = [
    "Tom", "Ben", "Sam", "Max", "Tim", "Jack", "Leo", "Joe", "Finn", "Noah", "Adam", "Alex",
    "Carl", "Dan", "Eli", "Felix", "Gabe", "Harry", "Ian", "Jake", "Kai", "Liam", "Luke",
    "Mark", "Milo", "Nate", "Oscar", "Owen", "Paul", "Ray", "Ryan", "Seth", "Theo", "Toby",
    "Victor", "Will", "Zack", "Arlo", "Bobby", "Caleb", "Dylan", "Ethan", "Frank", "George",
    "Henry", "Isaac", "Jonah", "Kevin", "Louis", "Matt", "Nick", "Omar", "Peter", "Rob",
    "Simon", "Teddy", "Hugo", "Rory", "Vince", "Wes",
]
# Names of animal characters and pets; kept apart from the children's names.
ANIMAL_NAMES = [
    "Spot", "Rex", "Buddy", "Biscuit", "Pepper", "Coco", "Patch", "Whiskers", "Mittens",
    "Shadow", "Pip", "Tweety", "Hoot", "Sunny", "Bruno", "Nutty", "Squeak", "Fluffy", "Ginger",
    "Peanut", "Pickles", "Muffin", "Bubbles", "Cookie", "Dotty", "Freddy", "Gus", "Hoppy",
    "Jellybean", "Ziggy", "Snowball", "Socks", "Tango", "Waffles", "Button", "Clover",
    "Maple", "Noodle", "Pumpkin", "Rusty", "Scout", "Toffee", "Bingo", "Honey", "Sprout",
    "Pebble", "Acorn", "Bean", "Marble", "Fudge", "Nibbles", "Puddle", "Thistle", "Zippy",
]
# Animal kind -> its talent (what it can do for a friend in trouble, see MISHAPS).
ANIMALS = {
    "dog": "sniff", "puppy": "sniff", "fox": "sniff", "pig": "sniff", "hedgehog": "small",
    "cat": "climb", "kitten": "climb", "squirrel": "climb", "monkey": "climb", "goat": "climb",
    "bird": "fly", "owl": "fly", "parrot": "fly", "robin": "fly", "bat": "fly",
    "bear": "strong", "elephant": "strong", "horse": "strong", "ox": "strong",
    "duck": "swim", "frog": "swim", "otter": "swim", "turtle": "swim", "swan": "swim",
    "mouse": "small", "hamster": "small", "rabbit": "dig", "mole": "dig", "badger": "dig",
    "beaver": "fix", "raccoon": "fix",
}
# Pet kind -> (the sound it makes, what it does when happy). Fixed, so a pet named early in
# a story makes the right sound paragraphs later.
PETS = {
    "dog": ("Woof! Woof!", "wagged {pet.his} tail"), "puppy": ("Yip! Yip!", "jumped up and down"),
    "cat": ("Meow!", "purred"), "kitten": ("Mew!", "rolled over"),
    "parrot": ("Squawk!", "flapped {pet.his} wings"),
    "hamster": ("Squeak!", "ran in {pet.his} wheel"),
    "rabbit": ("Sniff, sniff!", "hopped in a circle"), "duck": ("Quack! Quack!", "waddled around"),
    "goat": ("Maa!", "kicked up {pet.his} heels"),
    "turtle": ("Blink, blink.", "poked out {pet.his} head"),
}
CHILD_TALENTS = ["climb", "swim", "fix", "kind"]
SKILL_WORDS = {"climb": "climbing trees", "swim": "swimming", "fix": "fixing things",
               "kind": "cheering people up", "sniff": "finding things with {hero.his} nose",
               "fly": "flying", "strong": "lifting heavy things", "small": "squeezing into "
               "small places", "dig": "digging", }
TRAITS = ["curious", "brave", "shy", "kind", "clever", "cheerful", "playful", "gentle",
          "careful", "silly", "happy", "friendly", "busy", "quiet", "helpful", "funny",
          "thoughtful", "sleepy", "bouncy", "bold", "polite", "patient", "lively", "tidy",
          "messy", "giggly", "dreamy", "chatty", "sweet", "little"]
COLOURS = ["red", "blue", "green", "yellow", "orange", "purple", "pink", "white", "black",
           "brown", "grey", "golden", "silver", "striped", "spotted"]
TOYS = ["kite", "ball", "teddy bear", "toy car", "doll", "toy boat", "picture book", "drum",
        "scarf", "hat", "toy train", "robot", "puppet", "yo-yo", "whistle", "marble",
        "jump rope", "spinning top", "music box", "rag doll", "toy dinosaur", "stuffed bunny",
        "toy truck", "umbrella", "backpack", "harmonica", "box of crayons", "notebook",
        "toy plane", "magnifying glass", "flashlight", "sticker book", "tambourine", "glove",
        "toy rocket", "paper crown"]
# Things that can be shared one or two at a time: (one, many).
SNACKS = [("cookie", "cookies"), ("strawberry", "strawberries"), ("apple", "apples"),
          ("cherry", "cherries"), ("grape", "grapes"), ("cupcake", "cupcakes"),
          ("muffin", "muffins"), ("carrot", "carrots"), ("plum", "plums"),
          ("peach", "peaches"), ("cracker", "crackers"), ("blueberry", "blueberries"),
          ("sweet", "sweets"), ("pear", "pears"), ("banana", "bananas"),
          ("raspberry", "raspberries"), ("pretzel", "pretzels"), ("biscuit", "biscuits"),
          ("orange", "oranges"), ("walnut", "walnuts")]
# Favourite foods; the ones that are also DISHES can be cooked later in the story.
FOODS = ["pancakes", "vegetable soup", "banana bread", "apple pie", "pizza", "fruit salad",
         "cookies", "porridge", "muffins", "lemonade", "spaghetti", "ice cream", "honey toast",
         "cheese sandwiches", "rice pudding", "tomato soup", "carrot cake", "popcorn"]
FEEL_GOOD = ["happy", "glad", "proud", "excited", "pleased", "cheerful", "delighted"]
FEEL_BAD = ["sad", "upset", "worried", "cross", "gloomy", "grumpy", "disappointed"]
YUMMY = ["yummy", "tasty", "delicious", "sweet", "good", "lovely"]
TOWNS = ["a small town by the sea", "a little village near the woods", "a busy town",
         "a quiet village by a river", "a cottage at the edge of a forest",
         "a little house on a hill", "a town with a big clock tower", "a cabin near the hills",
         "a blue house on a long street", "a village with a duck pond"]
RAINBOW = ["red", "orange", "yellow", "green", "blue", "indigo", "violet"]
DAYS = ["sunny", "bright", "windy", "cold", "warm", "cloudy", "crisp", "quiet", "lovely"]
# Time words that start a later episode.
LATER = ["The next day,", "Later that week,", "A few days later,", "On Saturday,",
         "The next morning,", "After lunch,", "One afternoon,", "On Sunday,"]

# -- the lost toy: places in town (name, things done there, where a toy can be put down) ------

TOWN_PLACES = [
    ("bakery", ["bought a warm loaf of bread", "ate a sticky bun", "watched the baker make rolls"],
     "counter"),
    ("library", ["read a book about dragons", "read a book about the moon", "listened to a story"],
     "table"),
    ("park", ["played on the swings", "fed the pigeons", "went down the slide"], "bench"),
    ("pond", ["fed the ducks", "looked at the frogs", "threw pebbles in the water"], "grass"),
    ("market", ["bought some apples", "tasted some cheese", "bought some flowers for Mom"],
     "fruit stall"),
    ("post office", ["sent a letter to Grandma", "bought some stamps", "posted a card"],
     "counter"),
    ("toy shop", ["looked at the toys", "played with a toy train", "saw a huge teddy bear"],
     "shelf"),
    ("ice cream shop", ["ate strawberry ice cream", "ate chocolate ice cream",
                        "shared a banana split"], "table"),
    ("playground", ["climbed the climbing frame", "played in the sandpit", "rode the seesaw"],
     "steps of the slide"),
    ("museum", ["looked at the dinosaur bones", "saw an old knight's armour",
                "looked at the paintings"], "bench"),
    ("train station", ["watched the trains come and go", "waved at the train driver"],
     "bench"),
    ("flower shop", ["smelled the roses", "bought a pot of daisies"], "counter"),
    ("cafe", ["drank hot cocoa", "ate a slice of cake"], "table"),
    ("old bridge", ["watched the boats go by", "played pooh sticks"], "wall"),
    ("school", ["said hello to their teacher", "looked at the class hamster"], "desk"),
    ("beach", ["built a sandcastle", "looked for shells"], "sand"),
]

# -- hide and seek: where (name, hiding spots as "preposition the thing") ----------------------

HIDING_PLACES = {
    "the house": ["behind the sofa", "under the bed", "inside the wardrobe",
                  "behind the curtains", "under the kitchen table", "in the bathtub",
                  "behind the door", "inside the laundry basket"],
    "the garden": ["behind the big tree", "under the bushes", "inside the shed",
                   "behind the flower pots", "under the wheelbarrow", "behind the fence",
                   "inside the old barrel"],
    "the park": ["behind the slide", "under the bench", "inside the tunnel",
                 "behind the fountain", "up the climbing tree", "behind the bandstand"],
}
# A hider gives itself away: "{seeker} heard ..." / "{seeker} saw ...".
CLUES = ["heard a little giggle", "heard a sneeze", "saw a foot sticking out",
         "heard someone breathing", "saw something move", "heard a tiny squeak"]

# -- the race --------------------------------------------------------------------------------

COURSES = ["to the big oak tree", "around the pond", "to the top of the hill",
           "to the end of the beach", "to the old red gate", "across the meadow",
           "to the garden wall", "around the playground"]
# What makes a runner who was in front fall behind.
SLOWDOWNS = ["tripped over a root", "stopped to tie {r.his} shoe", "stopped to look at a butterfly",
             "slipped in a puddle", "looked back to wave", "ran the wrong way for a moment",
             "got a stone in {r.his} shoe", "stopped to pick a flower"]
PRIZES = ["a gold medal", "a shiny ribbon", "a paper crown", "a big sticker", "a little cup"]

# -- cooking: dish -> (ingredients as (amount, name, what was done with it), how it cooked) ---
# An amount with {n} gets a random count, which the step repeats ("all {n} eggs").

DISHES = {
    "pancakes": ([("{n} eggs", "eggs", "cracked all {n} eggs into a big bowl"),
                  ("a cup of flour", "flour", "poured in the flour"),
                  ("some milk", "milk", "stirred in the milk"),
                  ("a spoon of sugar", "sugar", "sprinkled in the sugar"),
                  ("a lump of butter", "butter", "melted the butter in the pan")],
                 "They cooked the pancakes in a hot pan and flipped them high in the air."),
    "vegetable soup": ([("{n} carrots", "carrots", "chopped the {n} carrots"),
                        ("two potatoes", "potatoes", "peeled the potatoes"),
                        ("an onion", "onion", "cut up the onion"),
                        ("a bag of peas", "peas", "tipped in the peas"),
                        ("a pinch of salt", "salt", "added the salt")],
                       "The soup bubbled on the stove for twenty minutes."),
    "banana bread": ([("{n} bananas", "bananas", "mashed the {n} bananas with a fork"),
                      ("two eggs", "eggs", "beat the eggs"),
                      ("a cup of flour", "flour", "mixed in the flour"),
                      ("some honey", "honey", "poured in the honey"),
                      ("a handful of nuts", "nuts", "sprinkled the nuts on top")],
                     "They baked the banana bread in the oven for an hour."),
    "apple pie": ([("{n} apples", "apples", "sliced the {n} apples"),
                   ("some pastry", "pastry", "rolled out the pastry"),
                   ("a spoon of cinnamon", "cinnamon", "sprinkled on the cinnamon"),
                   ("some brown sugar", "sugar", "added the sugar"),
                   ("a little milk", "milk", "brushed the top with milk")],
                  "The pie baked in the oven until it was golden brown."),
    "pizza": ([("a ball of dough", "dough", "stretched the dough into a circle"),
               ("some tomato sauce", "tomato sauce", "spread on the tomato sauce"),
               ("a bag of cheese", "cheese", "sprinkled on the cheese"),
               ("{n} mushrooms", "mushrooms", "put the {n} mushrooms on top"),
               ("a green pepper", "pepper", "added slices of the pepper")],
              "The pizza went into the hot oven for fifteen minutes."),
    "fruit salad": ([("{n} strawberries", "strawberries", "cut the {n} strawberries in half"),
                     ("a banana", "banana", "sliced the banana"),
                     ("a bunch of grapes", "grapes", "pulled the grapes off the stalk"),
                     ("an orange", "orange", "peeled the orange"),
                     ("a spoon of honey", "honey", "drizzled the honey over it all")],
                    "They mixed everything in a big glass bowl."),
    "cookies": ([("a cup of flour", "flour", "tipped the flour into the bowl"),
                 ("some butter", "butter", "squished in the butter"),
                 ("{n} spoons of sugar", "sugar", "added the {n} spoons of sugar"),
                 ("an egg", "egg", "cracked in the egg"),
                 ("a bag of chocolate chips", "chocolate chips", "stirred in the chocolate chips")],
                "They rolled the dough into little balls and baked them for ten minutes."),
    "porridge": ([("a cup of oats", "oats", "poured the oats into the pot"),
                  ("some milk", "milk", "added the milk"),
                  ("a spoon of honey", "honey", "stirred in the honey"),
                  ("{n} blueberries", "blueberries", "dropped the {n} blueberries on top")],
                 "The porridge bubbled gently until it was thick and warm."),
    "lemonade": ([("{n} lemons", "lemons", "squeezed the {n} lemons"),
                  ("a jug of water", "water", "poured in the water"),
                  ("some sugar", "sugar", "stirred in the sugar"),
                  ("a tray of ice", "ice", "dropped in the ice")],
                 "They stirred the lemonade until the sugar was gone."),
    "muffins": ([("a cup of flour", "flour", "sifted the flour"),
                 ("{n} eggs", "eggs", "whisked the {n} eggs"),
                 ("some milk", "milk", "poured in the milk"),
                 ("a box of blueberries", "blueberries", "folded in the blueberries")],
                "They spooned the mix into paper cases and baked them until they rose."),
}
# Where a missing ingredient is fetched from.
NEIGHBOURS = ["the shop on the corner", "the market", "the neighbour next door",
              "Grandma's house across the street", "the little farm shop"]

# -- a trip: destination -> (ways to get there, things seen, things packed and their use) ---

TRIPS = {
    "the beach": (["bus", "car", "train"],
                  ["big blue waves", "crabs on the rocks", "seagulls", "a lighthouse",
                   "a sailing boat", "shells in the sand"],
                  [("a sun hat", "The sun was hot, so {hero} put on {hero.his} sun hat."),
                   ("a towel", "After a swim, {hero} dried off with {hero.his} towel."),
                   ("a bucket and spade", "{hero} used {hero.his} bucket and spade to build a "
                    "big sandcastle."),
                   ("a beach ball", "{hero} and {friend} threw the beach ball back and forth."),
                   ("some sun cream", "{adult} rubbed some sun cream on {hero}'s nose.")]),
    "the zoo": (["bus", "car", "train"],
                ["lions", "tall giraffes", "noisy monkeys", "a sleepy tiger", "zebras",
                 "penguins", "a huge elephant"],
                [("a camera", "{hero} took a picture of the animals with {hero.his} camera."),
                 ("a water bottle", "It was hot, so {hero} drank from {hero.his} water bottle."),
                 ("a notebook", "{hero} drew the animals in {hero.his} notebook."),
                 ("a packed lunch", "At noon, they ate their packed lunch on a bench."),
                 ("a map", "{hero} used the map to find the way to the penguins.")]),
    "Grandma's farm": (["car", "train", "tractor"],
                       ["cows in the field", "pink pigs", "hens and chicks", "a big red barn",
                        "sheep on the hill", "a farm dog"],
                       [("rubber boots", "The mud was deep, so {hero} put on {hero.his} rubber "
                         "boots."),
                        ("a basket", "{hero} collected eggs from the hens in {hero.his} basket."),
                        ("an old jumper", "{hero} wore {hero.his} old jumper to help in the barn."),
                        ("some carrots", "{hero} fed the carrots to the horses.")]),
    "the mountains": (["car", "train", "bus"],
                      ["snowy peaks", "a waterfall", "a mountain goat", "an eagle", "pine trees",
                       "a little wooden hut"],
                      [("warm socks", "At the top it was cold, so {hero} pulled on {hero.his} "
                        "warm socks."),
                       ("a map", "When the path split in two, {hero} looked at the map."),
                       ("a flask of cocoa", "At the top, they drank the cocoa from the flask."),
                       ("binoculars", "{hero} looked at the eagle through {hero.his} "
                        "binoculars.")]),
    "the lake": (["car", "bike", "boat"],
                 ["swans", "fish jumping", "a wooden jetty", "dragonflies", "a rowing boat"],
                 [("a fishing net", "{hero} dipped {hero.his} fishing net in the water and "
                   "caught a tiny fish, then let it go."),
                  ("some bread", "{hero} fed the bread to the swans."),
                  ("a towel", "After paddling, {hero} dried {hero.his} feet with the towel."),
                  ("a kite", "The wind was just right, so {hero} flew {hero.his} kite.")]),
    "the city": (["train", "bus", "car"],
                 ["tall buildings", "a big fountain", "red buses", "a street musician",
                  "a huge clock", "pigeons in the square"],
                 [("some pocket money", "{hero} spent {hero.his} pocket money on a postcard."),
                  ("a camera", "{hero} took a picture of the fountain."),
                  ("an umbrella", "When it began to drizzle, {hero} opened {hero.his} "
                   "umbrella.")]),
    "the fair": (["bus", "car", "bike"],
                 ["a big wheel", "a merry-go-round", "candy floss", "a clown", "bright lights"],
                 [("some coins", "{hero} used {hero.his} coins to ride the merry-go-round."),
                  ("a warm coat", "When it got dark and cold, {hero} put on {hero.his} warm "
                   "coat."),
                  ("a bag", "{hero} put the prize {hero.he} won in {hero.his} bag.")]),
}
VEHICLE_MOVES = {"bus": "The bus rumbled along the road.", "car": "The car hummed along.",
                 "train": "The train went clickety-clack, clickety-clack.",
                 "tractor": "The tractor bumped along the lane.",
                 "bike": "They pedalled along the path.", "boat": "The boat rocked on the water."}
FIELD_ANIMALS = [("cow", "cows"), ("sheep", "sheep"), ("horse", "horses"), ("bird", "birds"),
                 ("rabbit", "rabbits"), ("goat", "goats"), ("deer", "deer")]

# -- helping a friend: mishap -> (what happens, the cry for help, the talents that solve it) -

MISHAPS = {
    "tree": ("the wind blew {victim.his} {thing} up into a tall tree",
             "My {thing} is stuck in the tree!", ("climb", "fly")),
    "roof": ("{victim.his} {thing} landed on the roof of the old shed",
             "My {thing} is up on the roof!", ("climb", "fly")),
    "lost": ("{victim} dropped {victim.his} {thing} in the tall grass and could not find it",
             "I lost my {thing}!", ("sniff",)),
    "broken": ("{victim.his} {thing} fell on a rock and broke into two pieces",
               "My {thing} is broken!", ("fix",)),
    "water": ("{victim.his} {thing} fell into the river and floated away",
              "My {thing} is in the water!", ("swim",)),
    "rock": ("{victim.his} {thing} rolled under a big heavy rock",
             "My {thing} is under the big rock!", ("strong",)),
    "hole": ("{victim.his} {thing} fell into a tiny crack in the wall",
             "My {thing} fell into a tiny crack!", ("small",)),
    "buried": ("{victim.his} {thing} got buried deep in the sand",
               "My {thing} is buried in the sand!", ("dig",)),
    "sad": ("a big dog barked and {victim} dropped {victim.his} {thing} in the mud",
            "My {thing} is all dirty and I am scared!", ("kind",)),
}
# Talent -> what the helper does ({r} is the helper).
RESCUES = {
    "climb": ["{r} climbed up, one branch at a time. {r.He} grabbed the {thing} and came down.",
              "\"I am good at climbing!\" said {r}. {r.He} climbed up and got the {thing}."],
    "fly": ["{r} flew up high, took the {thing} and brought it down.",
            "{r} flapped {r.his} wings and flew up. {r.He} picked up the {thing} and flew back."],
    "sniff": ["{r} sniffed the ground. Sniff, sniff! Soon {r.he} found the {thing}.",
              "{r} put {r.his} nose to the grass and sniffed. {r.He} found the {thing}!"],
    "fix": ["{r} got some glue and fixed the {thing}. It was as good as new.",
            "\"I can fix it!\" said {r}. {r.He} worked very hard and fixed the {thing}."],
    "swim": ["{r} jumped into the river and swam to the {thing}. {r.He} pushed it to the bank.",
             "\"I can swim!\" said {r}. {r.He} swam fast and brought back the {thing}."],
    "strong": ["{r} was very strong. {r.He} pushed the big rock away, and there was the {thing}.",
               "\"I am strong!\" said {r}. {r.He} lifted the rock and got the {thing}."],
    "small": ["{r} was very small. {r.He} squeezed into the crack and came back with the {thing}.",
              "\"I am small, I can fit!\" said {r}. {r.He} wriggled in and got the {thing}."],
    "dig": ["{r} dug and dug with {r.his} paws until {r.he} found the {thing}.",
            "\"I am good at digging!\" said {r}. Sand flew everywhere, and up came the {thing}."],
    "kind": ["{r} gave {victim} a big hug and said, \"Do not be scared. We can wash it together.\" "
             "They washed the {thing} until it was clean.",
             "{r} held {victim}'s hand and said, \"It is okay.\" Together they cleaned it."],
}
# What someone with each talent can do, said by a passer-by who cannot help.
CAN_DO = {"climb": "climb", "fly": "fly", "sniff": "find lost things", "fix": "fix things",
          "swim": "swim", "strong": "lift heavy things", "small": "fit into small places",
          "dig": "dig", "kind": "help with that"}

# -- a lesson: (warning, what was done instead, what happened, how it was put right, lesson) --

LESSONS = [
    ("Do not leave your bike out in the rain, or it will get rusty.",
     "left {hero.his} bike on the grass", "It rained all night, and in the morning the bike "
     "was wet and its chain was rusty.", "{adult} helped {hero} oil the chain", "put things away"),
    ("Hold on tight to your balloon, or it will fly away.",
     "let go of {hero.his} balloon to wave at {friend}", "Whoosh! The balloon floated up, up "
     "and away.", "{friend} gave {hero} one of {friend.his} own balloons", "hold on tight"),
    ("Do not run near the pond, it is slippery.",
     "ran along the edge of the pond", "{hero.He} slipped and fell splash into the mud.",
     "{adult} gave {hero} a warm bath", "keep away from the edge of the pond"),
    ("Do not eat too many sweets, or your tummy will hurt.",
     "ate one sweet after another", "Soon {hero.his} tummy hurt a lot.",
     "{adult} made {hero} a cup of mint tea", "stop after one or two sweets"),
    ("Water your plant every day, or it will wilt.",
     "forgot to water {hero.his} plant", "The plant drooped and its leaves turned brown.",
     "{hero} watered it, and slowly it stood up again", "look after {hero.his} plant"),
    ("Tie your shoelaces, or you will trip.",
     "ran off with {hero.his} laces undone", "{hero.He} tripped and scraped {hero.his} knee.",
     "{adult} put a plaster on the knee", "tie {hero.his} laces"),
    ("Put the lid back on the paint, or it will dry out.",
     "left the lid off the paint", "The next day the paint was hard and dry.",
     "{adult} bought a new pot of paint", "put the lids back on"),
    ("Close the gate, or {pet} will run away.",
     "left the gate open", "{pet} ran out into the lane!",
     "They called and called until {pet} came back", "close the gate"),
    ("Put your toys away, or someone will step on them.",
     "left {hero.his} blocks on the stairs", "{adult} stepped on a block and said, \"Ouch!\"",
     "{hero} said sorry and put the blocks in the box", "put {hero.his} toys away"),
    ("Wear your coat, or you will catch a cold.",
     "went out without {hero.his} coat", "By evening, {hero.he} was sneezing: Atchoo! Atchoo!",
     "{adult} tucked {hero} up with a hot drink", "wear {hero.his} coat"),
]
# Something to do between the warning and forgetting it: the warning is then far back.
PASTIMES = [
    "{hero} played with {hero.his} {toy} for a long time.",
    "{hero} and {friend} built a tall tower of blocks and knocked it down.",
    "{hero} drew a picture of a {colour} dragon with a long tail.",
    "{hero} helped {adult} sort the socks into pairs.",
    "{hero} counted the clouds in the sky.",
    "{hero} sang a song about a frog who lived in a well.",
    "{hero} read a book about pirates and buried treasure.",
    "{hero} and {friend} played catch until their arms were tired.",
    "{hero} made a necklace out of {colour} beads.",
    "{hero} watched a snail climb slowly up the wall.",
]

# -- the garden: (seed, plant, many plants, what it grew into) -------------------------------

PLANTS = [("sunflower", "sunflowers", "taller than Dad, with big yellow faces"),
          ("tomato", "tomato plants", "covered in little red tomatoes"),
          ("bean", "bean plants", "climbing up their sticks, full of long green beans"),
          ("pumpkin", "pumpkin plants", "spreading over the ground, with one huge orange pumpkin"),
          ("carrot", "carrots", "ready to pull up, with feathery green tops and orange roots"),
          ("pea", "pea plants", "full of fat green pods"),
          ("daisy", "daisies", "white and yellow, nodding in the wind"),
          ("strawberry", "strawberry plants", "full of sweet red berries"),
          ("radish", "radishes", "round and red and a little bit spicy")]

# -- bedtime: (the hero of the bedtime tale, what it did) -------------------------------------

TALES = [("a brave little mouse", "mouse", "sailed across the sea in a teacup"),
         ("a dragon who was afraid of the dark", "dragon", "made friends with a firefly"),
         ("a princess who loved mud", "princess", "won the great puddle-jumping contest"),
         ("a lost star", "star", "found its way back to the sky"),
         ("a tiny snail", "snail", "went all the way round the world"),
         ("a bear who could not sleep", "bear", "counted sheep until the sun came up"),
         ("a knight with a wooden sword", "knight", "rescued a kitten from a tall tower"),
         ("a whale who loved to sing", "whale", "taught the fish a new song"),
         ("a robot who wanted to dance", "robot", "danced at the king's party"),
         ("a little cloud", "cloud", "made it rain on a thirsty garden")]
PYJAMAS = ["little stars", "blue moons", "red rockets", "yellow ducks", "green frogs",
           "pink hearts", "tiny boats", "white clouds"]

# Dialogue tags: '"...," said Tom.' becomes '"...," replied Tom softly.' and the like.
_TAG = re.compile(r'([,.!?])" (said|asked) ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\.')
TAG_VERBS = {",": ["said", "replied", "answered", "whispered", "added"],
             ".": ["said", "replied", "answered", "whispered", "added"],
             "!": ["said", "shouted", "cried", "called", "laughed"],
             "?": ["asked", "wondered", "said"]}
MANNERS = ["softly", "with a smile", "quietly", "happily", "loudly", "at once", "with a nod",
           "slowly", "brightly", "kindly"]

# Endings for a story without a bedtime episode.
ENDINGS = ["From that day on, {hero} and {friend} were the best of friends.",
           "{hero} smiled. It had been a very good {span}.",
           "And they all lived happily ever after.",
           "{hero} could not wait for the next adventure.", "{hero} was tired, but very happy.",
           "That night, {hero} slept with a big smile on {hero.his} face."]


# -- the cast ----------------------------------------------------------------------------------

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


class _Story:
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
        return self.rng.choices(seq, cum_weights=_zipf(len(seq)))[0]

    def child(self) -> Character:
        he = self.rng.choice(("he", "she"))  # even odds: Zipf is for words, not for sexes
        name = self._unused(BOY_NAMES if he == "he" else GIRL_NAMES)
        return Character(name, "boy" if he == "he" else "girl", he, self.pick(CHILD_TALENTS))

    def animal(self, kinds=None) -> Character:
        kind = self.pick(kinds or list(ANIMALS))
        return Character(self._unused(ANIMAL_NAMES), kind, self.rng.choice(("he", "she")),
                         ANIMALS.get(kind, "kind"))

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
        self.paragraphs.append(_TAG.sub(self._tag, text))

    def _tag(self, m) -> str:
        """A dialogue tag ('"Hello!" said Tom.') with a verb that fits the punctuation, and
        sometimes a manner: small free choices in almost every paragraph."""
        manner = " " + self.pick(MANNERS) if self.rng.random() < 0.3 else ""
        return f'{m[1]}" {self.pick(TAG_VERBS[m[1]])} {m[3]}{manner}.'


@functools.cache
def _zipf(n: int) -> list[float]:
    """Cumulative weights 1, 1 + 1/2, 1 + 1/2 + 1/3, ... of n entries."""
    return list(itertools.accumulate(1 / rank for rank in range(1, n + 1)))


def _a(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _listing(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _intro(who: Character) -> str:
    """How a newcomer is first named: 'a girl named Mia' or 'a fox named Rusty'."""
    return f"{_a(who.kind)} named {who.name}"


def _count(n: int, one: str, many: str) -> str:
    return f"{NUMBERS[n]} {one if n == 1 else many}"


# -- the story ---------------------------------------------------------------------------------

def generate_stories(n_stories: int = 20000, seed: int = 0) -> list[str]:
    """n_stories stories (ASCII text), the same list for the same (n_stories, seed)."""
    rng = random.Random(seed)
    return [_story(rng) for _ in range(n_stories)]


def _story(rng: random.Random) -> str:
    s = _Story(rng)
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
        _bedtime(s)
    else:
        _ending(s)
    return "\n\n".join(s.paragraphs)


def _cast(s: _Story) -> None:
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
    s.slots = {"hero": s.hero, "friend": s.friend, "pet": s.pet, "adult": s.adult,
               "toy": s.toy, "colour": s.colour, "food": s.food}


def _opening(s: _Story) -> None:
    hero, rng = s.hero, s.rng
    trait = s.pick(TRAITS)
    first = s.pick([
        "Once upon a time, there was {a_trait} {hero.kind} named {hero}.",
        "Once upon a time, in {town}, there lived {a_trait} {hero.kind} named {hero}.",
        "There once was {a_trait} {hero.kind} named {hero} who lived in {town}.",
        "{hero} was {a_trait} {hero.kind} who lived in {town}.",
    ])
    facts = [s.pick(["{hero.His} favourite colour was {colour}.",
                     "{hero.He} loved the colour {colour}."]),
             s.pick(["More than anything, {hero.he} loved {food}.",
                     "{hero.His} favourite food was {food}."]),
             s.pick(["{hero.He} had {a_toy} that {hero.he} took everywhere.",
                     "{hero.His} best toy was {a_toy}."])]
    rng.shuffle(facts)  # the same facts in any order: which comes first carries no signal
    s.skill_told = rng.random() < 0.5  # only a told skill can be remembered in _helping
    if s.skill_told:
        facts.append("{hero} was very good at " + SKILL_WORDS[hero.talent] + ".")
    s.say(first, *facts, a_trait=_a(trait), town=s.pick(TOWNS), a_toy=_a(s.toy))
    second = ["{hero.His} best friend was " + _intro(s.friend) + ".",
              s.pick(["{friend} lived next door.", "{friend} lived across the street.",
                      "They did everything together.", "{friend} was always laughing."])]
    if s.pet:
        second.append(s.pick(["{hero} also had a pet {pet.kind} called {pet}.",
                              "{hero} had a {pet.kind} named {pet}, who followed {hero.him} "
                              "everywhere."]))
    s.say(*second)


# -- episodes: each appends paragraphs and one recap phrase -----------------------------------

def _lost_and_found(s: _Story) -> None:
    toy = s.toy.split(" ", 1)[1]  # "kite" of "red kite"
    visits = s.rng.sample(TOWN_PLACES, s.rng.randint(2, 4))
    left_at = s.rng.randrange(len(visits))
    steps = []
    for i, (place, acts, surface) in enumerate(visits):
        if i == 0:
            start = "First, they went to the"
        elif i == len(visits) - 1:
            start = "Last of all, they stopped at the"
        else:
            start = s.pick(["Then they went to the", "After that, they went to the"])
        act = s.pick(acts)
        if i == left_at:
            steps.append(f"{start} {place}, where they {act}. {{hero}} put {{hero.his}} {{toy}} "
                         f"down on the {surface} for a moment.")
        else:
            steps.append(f"{start} {place}, where they {act}.")
    s.say("{when} {hero} and {friend} went into town. {hero} took {hero.his} {toy} along.",
          *steps, when=s.when)
    places = [v[0] for v in visits]
    s.say("When they got home, {hero} looked for {hero.his} {toy}. It was gone!",
          "\"Oh no! Where is my {short}?\" cried {hero}.",
          "\"Let's think,\" said {friend}. \"Where did we go today?\"",
          "\"We went to " + _listing(["the " + p for p in places]) + ",\" said {hero}.", short=toy)
    search = []
    for place, _, surface in visits[:left_at]:
        search.append(s.pick(["They went back to the {p}. The {t} was not there.",
                              "They looked all around the {p}, but there was no {t}."])
                      .replace("{p}", place).replace("{t}", toy))
    place, _, surface = visits[left_at]
    search.append(f"Then {{hero}} remembered. \"I put it on the {surface} at the {place}!\"")
    search.append(s.pick([f"They ran to the {place}, and there it was, on the {surface}: "
                          "{hero.his} {toy}!",
                          f"At the {place}, the {toy} was still on the {surface}, just where "
                          "{hero} had left it."]))
    s.say(*search)
    s.say(s.pick(["{hero} hugged {hero.his} {short}. \"I will be more careful,\" {hero.he} said.",
                  "\"Thank you for helping me look, {friend},\" said {hero}.",
                  "{hero} held on to {hero.his} {short} all the way home."]), short=toy)
    s.recap.append(f"found {{hero.his}} {toy} at the {place}")


def _sharing(s: _Story) -> None:
    one, many = s.pick(SNACKS)
    have = s.rng.randint(4, 10)
    giver = s.pick([s.adult, "Grandma" if s.adult != "Grandma" else "Grandpa", "the baker"])
    visitors = [s.friend] + [s.someone() for _ in range(s.rng.randint(1, 3))]
    if s.pet and s.rng.random() < 0.3:
        visitors.insert(s.rng.randrange(1, len(visitors) + 1), s.pet)
    opening = ["{when} {giver} gave {hero} {count} in {a_colour} basket."]
    if have <= 8 and s.rng.random() < 0.6:  # counting out loud: a sequence that ends at `have`
        opening.append("{hero} counted them: " + ", ".join(COUNTING[1:have + 1]) + ".")
    opening.append(s.pick(["\"They look {yum}!\" said {hero}.", "{hero} was so {good}.",
                           "\"Thank you!\" said {hero}."]))
    s.say(*opening, when=s.when, giver=giver, count=_count(have, one, many),
          a_colour=_a(s.pick(COLOURS)), yum=s.pick(YUMMY), good=s.pick(FEEL_GOOD))
    fed = []
    for v in visitors:
        arrive = ("Then {v} came by." if v is s.friend or v is s.pet
                  else "Then " + _intro(v) + " came by.")
        if have == 0:
            s.say(arrive, "\"May I have one?\" asked {v}.",
                  "\"I am sorry, I have no {many} left,\" said {hero}. So {hero} gave {v} a "
                  "big hug instead.", v=v, many=many)
            continue
        give = min(have, s.pick((1, 1, 2)))
        have -= give
        fed.append(v.name)
        left = f"Now {{hero}} had {_count(have, one, many)} left." if have else \
            f"Now {{hero}} had no {many} left."
        s.say(arrive, s.pick(["\"Hello, {hero}! May I have one?\" asked {v}.",
                              "\"Those look {yum},\" said {v}.",
                              "{v} looked at the basket and smiled."]),
              "{hero} gave {v} {gift}.", left, s.pick(["\"Thank you!\" said {v}.", "",
                                                       "{v} said, \"You are kind.\""]),
              v=v, gift=_count(give, one, many), yum=s.pick(YUMMY))
    if have:
        s.say("{hero} ate the last " + (one if have == 1 else f"{NUMBERS[have]} {many}") +
              " {hero.him}self. Sharing made {hero.him} feel {good}.",
              good=s.pick(FEEL_GOOD))
    else:
        s.say("{hero} had no {many} left, but {hero.he} did not mind. {friend} shared "
              "{friend.his} lunch with {hero.him}, and they laughed together.", many=many)
    s.recap.append(f"shared {{hero.his}} {many} with {_listing(fed)}")


def _trip(s: _Story) -> None:
    place = s.pick(list(TRIPS))
    ways, sights, packs = TRIPS[place]
    way = s.pick(ways)
    packed = s.rng.sample(packs, s.rng.randint(2, min(4, len(packs))))
    s.say("{when} {hero} went on a trip to {place} with {adult} and {friend}. They went by "
          "{way}.", "Before they left, {hero} packed {hero.his} bag. {hero.He} put in "
          + _listing([p[0] for p in packed]) + ".", when=s.when, place=place, way=way)
    _, many = s.pick(FIELD_ANIMALS)
    n = s.rng.randint(2, 9)
    s.say(VEHICLE_MOVES[way], s.pick(["{hero} looked out of the window and counted {n} {many}.",
                                      "On the way, they saw {n} {many} in a field."]),
          s.pick(["\"Are we there yet?\" asked {friend}.", "", "{hero} sang a song to pass "
                  "the time."]), n=NUMBERS[n], many=many)
    seen = s.rng.sample(sights, 3)
    s.say("At last they got to {place}. {hero} felt {good}.", "They saw " + _listing(seen) + ".",
          *[use for _, use in packed], "{hero} was glad {hero.he} had packed so well.",
          place=place, good=s.pick(FEEL_GOOD))
    s.say(s.pick(["On the way home, {hero} fell asleep.",
                  "When they got home, {hero} told {pet_or_friend} all about {place}.",
                  "\"Can we come back soon?\" asked {hero} on the way home."]),
          way=way, place=place, pet_or_friend=s.pet or s.friend)
    s.recap.append(f"gone to {place} by {way}")


def _race(s: _Story) -> None:
    runners = [s.hero, s.friend] + [s.someone() for _ in range(s.rng.randint(1, 2))]
    course = s.pick(COURSES)
    s.say("{when} {hero} and {friend} met " + _listing([_intro(r) for r in runners[2:]]) +
          ". \"Let's have a race {course}!\" said {starter}.",
          "They stood in a line. \"Ready, steady, go!\" shouted {adult}, and off they ran.",
          when=s.when, course=course, starter=s.pick(runners))
    order = runners[:]
    s.rng.shuffle(order)  # the finishing order
    leader = s.pick(runners)
    if leader is order[0]:
        s.say("{r} ran fast and was in front from the start. Nobody could catch {r.him}.",
              r=leader)
    else:
        s.say("At first, {r} was in front. But then {r} " + s.pick(SLOWDOWNS) + ", and {w} ran "
              "past {r.him}.", r=leader, w=order[0])
    places = [f"{order[0].name} reached the end first."]
    places += [f"{r.name} came {ORDINALS[i + 1]}." for i, r in enumerate(order[1:], 1)]
    prize = s.pick(PRIZES)
    s.say(" ".join(places), "{adult} gave {w} {prize}. \"Well done, {w}!\" everyone cheered.",
          s.pick(["{last} was a bit sad, but {w} said, \"You ran very well.\"",
                  "\"Next time I will win,\" laughed {last}.",
                  "Then they all sat on the grass to rest."]),
          w=order[0], last=order[-1], prize=prize)
    rank = order.index(s.hero) + 1
    s.recap.append("won a race " + course if rank == 1 else
                   f"come {ORDINALS[rank]} in a race {course}")


def _hide_and_seek(s: _Story) -> None:
    where = s.pick(list(HIDING_PLACES))
    players = [s.hero, s.friend] + ([s.pet] if s.pet and s.rng.random() < 0.5 else
                                    [s.someone() for _ in range(s.rng.randint(0, 1))])
    seeker = s.pick(players)
    hiders = [p for p in players if p is not seeker]
    spots = s.rng.sample(HIDING_PLACES[where], len(hiders) + 1)
    upto = s.rng.randint(5, 20)
    s.say("{when} " + _listing([p.name if p in (s.hero, s.friend, s.pet) else _intro(p)
                                for p in players]) + " played hide and seek in {where}.",
          "{seeker} was the seeker. {seeker.He} covered {seeker.his} eyes and counted: \"" +
          ", ".join(COUNTING[1:upto + 1]) + "! Ready or not, here I come!\"",
          when=s.when, where=where, seeker=seeker)
    s.say(*[f"{p.name} hid {spot}." for p, spot in zip(hiders, spots)])
    found = hiders[:]
    s.rng.shuffle(found)
    looking = []
    if s.rng.random() < 0.6:  # a wrong guess first: the spot nobody chose
        looking.append(f"{{seeker}} looked {spots[-1]}, but nobody was there.")
    for p in found:
        spot = spots[hiders.index(p)]
        looking.append(s.pick(["Then {seeker} {clue}. {seeker.He} looked {spot}: there was {p}!",
                               "{seeker} looked {spot}. \"Found you, {p}!\""])
                       .replace("{clue}", s.pick(CLUES)).replace("{spot}", spot)
                       .replace("{p}", p.name))
    s.say(*looking, s.pick(["{last} was the best hider of all.",
                            "They played again and again until it was time for tea."]),
          seeker=seeker, last=found[-1])
    s.recap.append("played hide and seek in " + where)


def _cooking(s: _Story) -> None:
    rng = s.rng
    favourite = s.food in DISHES and rng.random() < 0.5
    dish = s.food if favourite else s.pick(list(DISHES))
    ingredients, cooked = DISHES[dish]
    used = rng.sample(range(len(ingredients)), rng.randint(3, len(ingredients)))
    used.sort()  # recipes keep their order
    n = str(NUMBERS[rng.randint(2, 6)])
    items = [(ingredients[i][0].replace("{n}", n), ingredients[i][1],
              ingredients[i][2].replace("{n}", n)) for i in used]
    cook = s.pick([s.adult, s.friend])
    why = ("because it was {hero.his} favourite food" if favourite else
           s.pick(["for a picnic", "for tea", "as a surprise for " + s.adult
                   if cook is s.friend else "as a surprise for " + s.friend.name]))
    s.say("{when} {hero} and {cook} decided to make {dish} " + why + ".",
          "\"We need " + _listing([i[0] for i in items]) + ",\" said {cook}.",
          when=s.when, cook=cook, dish=dish)
    if rng.random() < 0.4:  # a missing ingredient, fetched before cooking goes on
        amount, name, _ = s.pick(items)
        s.say("{hero} looked in the cupboard. \"Oh no, we have no {name}!\"",
              "So {hero} ran to {shop} and came back with {amount}.",
              name=name, shop=s.pick(NEIGHBOURS), amount=amount)
    steps = ["First, {hero} " + items[0][2] + "."]
    steps += [s.pick(["Then {hero.he} ", "Next, {cook} ", "After that, {hero.he} "]) + step + "."
              for _, _, step in items[1:]]
    s.say(*steps, cooked, cook=cook)
    s.say(s.pick(["The {dish} smelled {yum}.", "Soon the {dish} was ready."]),
          s.pick(["{hero} took a bite. \"Mmm!\" {hero.he} said.",
                  "They ate every last bit.",
                  "{hero} saved some for {friend}."]), dish=dish, yum=s.pick(YUMMY))
    s.recap.append(f"made {dish} with {cook.name if cook is s.friend else cook}")


def _rainy_day(s: _Story) -> None:
    plan = s.pick(["go to the park", "have a picnic", "play football", "fly {hero.his} "
                   "{toy}", "ride {hero.his} bike", "go to the beach"])
    s.say("{when} {hero} wanted to " + plan + ". But when {hero.he} looked out of the "
          "window, the sky was grey and rain was pouring down.",
          s.pick(["Pitter-patter, pitter-patter went the rain.",
                  "Boom! went the thunder, far away.", "The drops ran down the window."]),
          "{hero} felt {bad}. \"Now I cannot " + plan.replace("{hero.his}", "my") + "!\"",
          when=s.when, bad=s.pick(FEEL_BAD))
    games = s.rng.sample([
        "{hero} and {friend} built a fort out of blankets and pillows.",
        "They painted a picture of a {colour} house with a {colour2} door.",
        "They played a board game, and {friend} won twice.",
        "They made a puppet show for {adult}.",
        "{hero} read a story to {pet_or_friend}.",
        "They baked little buns and ate them warm.",
        "They did a puzzle with a hundred pieces.",
    ], 2)
    s.say(s.pick(["\"We can play inside,\" said {adult}.", "Then {friend} came over, dripping "
                  "wet."]), *games, colour2=s.pick(COLOURS), pet_or_friend=s.pet or s.friend)
    if s.rng.random() < 0.6:  # the rainbow always names its colours in the same order
        # Whether the favourite colour (named in the opening) is in it decides what is said.
        s.say("When the rain stopped, there was a rainbow in the sky. {hero} named all its "
              "colours: " + _listing(RAINBOW) + ".",
              "\"Look, there is {colour}, my favourite colour!\" said {hero}."
              if s.colour in RAINBOW else
              "\"There is no {colour} in a rainbow,\" said {hero}. \"But it is still pretty.\"")
    s.recap.append("played inside on a rainy day")


def _helping(s: _Story) -> None:
    victim = s.pick([s.friend, s.someone()])
    mishap = s.pick(list(MISHAPS))
    what, cry, talents = MISHAPS[mishap]
    thing = s.pick(COLOURS) + " " + s.pick(TOYS)
    intro = "{victim}" if victim is s.friend else _intro(victim)
    s.say("{when} {hero} was playing near the river when {hero.he} met " + intro + ".",
          "{victim} was playing with {victim.his} {thing}. But then, " + what + ".",
          s.pick(["{victim} began to cry.", "{victim} did not know what to do.",
                  "{victim} felt very {bad}."]), "\"" + cry + "\" {victim} said.",
          when=s.when, victim=victim, thing=thing, bad=s.pick(FEEL_BAD))
    if s.skill_told and s.hero.talent in talents:  # the skill named in the opening
        helper = s.hero
        help_line = "{hero} remembered that {hero.he} was good at " + SKILL_WORDS[s.hero.talent] \
            + ". \"I can help!\" {hero.he} said."
    else:
        if s.rng.random() < 0.5:  # someone whose talent does not fit tries first
            p = s.animal([k for k, t in ANIMALS.items() if t not in talents])
            s.say(f"First, {p.name} the {p.kind} came by. \"I am sorry, I cannot "
                  f"{CAN_DO[p.talent]},\" {p.he} said.")
        helper = s.animal([k for k, t in ANIMALS.items() if t in talents]) if talents != \
            ("kind",) else s.someone()
        helper.talent = s.pick(talents)
        help_line = "Just then, " + _intro(helper) + " came by. \"Why are you sad?\" asked {r}."
    s.say(help_line, s.pick(RESCUES[helper.talent]), s.pick([
        "\"Thank you, {r}!\" said {victim}.", "{victim} smiled a big smile.",
        "{victim} was so happy that {victim.he} jumped up and down."]),
        r=helper, victim=victim, thing=thing.split(" ", 1)[1])
    s.recap.append(f"helped {victim.name} with {victim.his} {thing}")


def _lesson(s: _Story) -> None:
    warning, did, happened, fixed, lesson = s.pick(
        LESSONS if s.pet else [x for x in LESSONS if "{pet}" not in x[0]])
    s.say("{when} {adult} said to {hero}, \"" + warning + "\"",
          s.pick(["\"I will,\" said {hero}.", "\"Yes, yes,\" said {hero}, but {hero.he} was "
                  "not really listening.", "{hero} nodded."]), when=s.when)
    s.say(*s.rng.sample(PASTIMES, s.rng.randint(1, 3)))
    s.say("Later, {hero} forgot and " + did + ". " + happened,
          "Then {hero} remembered what {adult} had said: \"" + warning + "\"")
    s.say(fixed[0].upper() + fixed[1:] + ". " + s.pick([
        "{hero} said, \"I am sorry. Next time I will listen.\"",
        "From then on, {hero} always remembered."]))
    s.recap.append("learned to " + lesson)


def _garden(s: _Story) -> None:
    seed, plants, grown = s.pick(PLANTS)
    n = s.rng.randint(3, 9)
    s.say("{when} {adult} gave {hero} a packet of " + seed + " seeds.",
          "{hero} dug {n} little holes in the garden and put one seed in each hole. Then "
          "{hero.he} covered them with soil.", when=s.when, n=NUMBERS[n])
    days = s.rng.randint(2, 6)
    lines = []
    for d in range(1, days):
        lines.append(s.pick(["On the {d} day, {hero} watered the seeds. Nothing happened.",
                             "On the {d} day, {hero} watered them again. Still nothing.",
                             "On the {d} day, {hero} looked and looked, but there was nothing "
                             "to see."]).replace("{d}", ORDINALS[d]))
    up = s.rng.randint(1, n)
    shoots = _count(up, "tiny green shoot", "tiny green shoots")
    lines.append(f"On the {ORDINALS[days]} day, {{hero}} saw {shoots}! " + (
        "All of the seeds had come up." if up == n else
        f"{NUMBERS[n - up].capitalize()} of the {NUMBERS[n]} seeds had not come up yet."))
    s.say(*lines)
    s.say("{hero} took care of them every day. After many weeks, the " + plants + " were "
          + grown + ".", s.pick(["{hero} felt very {good}.",
                                 "\"I grew them all by myself!\" said {hero}."]),
          good=s.pick(FEEL_GOOD))
    s.recap.append(f"grown {plants} from {NUMBERS[n]} little seeds")


EPISODES = [_lost_and_found, _sharing, _trip, _race, _hide_and_seek, _cooking, _rainy_day,
            _helping, _lesson, _garden]


def _bedtime(s: _Story) -> None:
    """The last episode: the day winds down and the hero recalls every episode, in order."""
    creature, short, deed = s.pick(TALES)
    s.say("That night, {hero} put on {hero.his} pyjamas with " + s.pick(PYJAMAS) + " on them "
          "and brushed {hero.his} teeth.",
          "{adult} read {hero.him} a story about " + creature + ". In the end, the " + short
          + " " + deed + ".",
          s.pick(["{hero} hugged {hero.his} {toy}.", "{hero} held {hero.his} {toy} close."]))
    goodnight = ("\"Goodnight, {adult}. Goodnight, {pet},\" said {hero}. {pet} answered, \""
                 + PETS[s.pet.kind][0] + "\"") if s.pet else "\"Goodnight, {adult},\" said {hero}."
    s.say(goodnight,
          "As {hero.he} fell asleep, {hero} thought about everything {hero.he} had done: "
          "{hero.he} had " + _listing(s.recap) + ".", "The end.")


def _ending(s: _Story) -> None:
    lines = []
    if len(s.recap) > 1:
        lines.append("What a busy {span}! {hero} had " + _listing(s.recap) + ".")
    lines.append(s.pick(ENDINGS))
    if s.pet and s.rng.random() < 0.5:
        lines.append("{pet} " + PETS[s.pet.kind][1] + ". \"" + PETS[s.pet.kind][0] + "\"")
    s.say(*lines, span="week" if len(s.recap) > 2 else "day")
