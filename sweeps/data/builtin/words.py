"""The word tables the stories are made from: names, animals, things, places and the parts
of each plot. Order matters: choices are Zipfian, so the first entry of a list is the most
common."""

from __future__ import annotations

import re

NUMBERS = [
    "no",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
COUNTING = [
    "",
    "One",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
ORDINALS = ["", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]

GIRL_NAMES = [
    "Lily",
    "Mia",
    "Sara",
    "Emma",
    "Lucy",
    "Anna",
    "Zoe",
    "Ella",
    "Amy",
    "Rosa",
    "Ava",
    "Chloe",
    "Grace",
    "Hannah",
    "Isla",
    "Ivy",
    "Julia",
    "Kate",
    "Layla",
    "Maya",
    "Nora",
    "Olivia",
    "Ruby",
    "Sophie",
    "Tara",
    "Una",
    "Vera",
    "Willa",
    "Yara",
    "Alice",
    "Bella",
    "Clara",
    "Eva",
    "Fiona",
    "Gemma",
    "Holly",
    "Iris",
    "Jade",
    "Kira",
    "Lena",
    "Maria",
    "Nina",
    "Olive",
    "Poppy",
    "Rita",
    "Stella",
    "Tess",
    "Violet",
    "Wendy",
    "Abby",
    "Beth",
    "Cora",
    "Dora",
    "Elsie",
    "Freya",
    "Gina",
    "Hazel",
    "Megan",
    "Nell",
    "Pia",
]
BOY_NAMES = [
    "Tom",
    "Ben",
    "Sam",
    "Max",
    "Tim",
    "Jack",
    "Leo",
    "Joe",
    "Finn",
    "Noah",
    "Adam",
    "Alex",
    "Carl",
    "Dan",
    "Eli",
    "Felix",
    "Gabe",
    "Harry",
    "Ian",
    "Jake",
    "Kai",
    "Liam",
    "Luke",
    "Mark",
    "Milo",
    "Nate",
    "Oscar",
    "Owen",
    "Paul",
    "Ray",
    "Ryan",
    "Seth",
    "Theo",
    "Toby",
    "Victor",
    "Will",
    "Zack",
    "Arlo",
    "Bobby",
    "Caleb",
    "Dylan",
    "Ethan",
    "Frank",
    "George",
    "Henry",
    "Isaac",
    "Jonah",
    "Kevin",
    "Louis",
    "Matt",
    "Nick",
    "Omar",
    "Peter",
    "Rob",
    "Simon",
    "Teddy",
    "Hugo",
    "Rory",
    "Vince",
    "Wes",
]
# Names of animal characters and pets; kept apart from the children's names.
ANIMAL_NAMES = [
    "Spot",
    "Rex",
    "Buddy",
    "Biscuit",
    "Pepper",
    "Coco",
    "Patch",
    "Whiskers",
    "Mittens",
    "Shadow",
    "Pip",
    "Tweety",
    "Hoot",
    "Sunny",
    "Bruno",
    "Nutty",
    "Squeak",
    "Fluffy",
    "Ginger",
    "Peanut",
    "Pickles",
    "Muffin",
    "Bubbles",
    "Cookie",
    "Dotty",
    "Freddy",
    "Gus",
    "Hoppy",
    "Jellybean",
    "Ziggy",
    "Snowball",
    "Socks",
    "Tango",
    "Waffles",
    "Button",
    "Clover",
    "Maple",
    "Noodle",
    "Pumpkin",
    "Rusty",
    "Scout",
    "Toffee",
    "Bingo",
    "Honey",
    "Sprout",
    "Pebble",
    "Acorn",
    "Bean",
    "Marble",
    "Fudge",
    "Nibbles",
    "Puddle",
    "Thistle",
    "Zippy",
]
# Animal kind -> its talent (what it can do for a friend in trouble, see MISHAPS).
ANIMALS = {
    "dog": "sniff",
    "puppy": "sniff",
    "fox": "sniff",
    "pig": "sniff",
    "hedgehog": "small",
    "cat": "climb",
    "kitten": "climb",
    "squirrel": "climb",
    "monkey": "climb",
    "goat": "climb",
    "bird": "fly",
    "owl": "fly",
    "parrot": "fly",
    "robin": "fly",
    "bat": "fly",
    "bear": "strong",
    "elephant": "strong",
    "horse": "strong",
    "ox": "strong",
    "duck": "swim",
    "frog": "swim",
    "otter": "swim",
    "turtle": "swim",
    "swan": "swim",
    "mouse": "small",
    "hamster": "small",
    "rabbit": "dig",
    "mole": "dig",
    "badger": "dig",
    "beaver": "fix",
    "raccoon": "fix",
}
# Pet kind -> (the sound it makes, what it does when happy). Fixed, so a pet named early in
# a story makes the right sound paragraphs later.
PETS = {
    "dog": ("Woof! Woof!", "wagged {pet.his} tail"),
    "puppy": ("Yip! Yip!", "jumped up and down"),
    "cat": ("Meow!", "purred"),
    "kitten": ("Mew!", "rolled over"),
    "parrot": ("Squawk!", "flapped {pet.his} wings"),
    "hamster": ("Squeak!", "ran in {pet.his} wheel"),
    "rabbit": ("Sniff, sniff!", "hopped in a circle"),
    "duck": ("Quack! Quack!", "waddled around"),
    "goat": ("Maa!", "kicked up {pet.his} heels"),
    "turtle": ("Blink, blink.", "poked out {pet.his} head"),
}
CHILD_TALENTS = ["climb", "swim", "fix", "kind"]
SKILL_WORDS = {
    "climb": "climbing trees",
    "swim": "swimming",
    "fix": "fixing things",
    "kind": "cheering people up",
    "sniff": "finding things with {hero.his} nose",
    "fly": "flying",
    "strong": "lifting heavy things",
    "small": "squeezing into small places",
    "dig": "digging",
}
TRAITS = [
    "curious",
    "brave",
    "shy",
    "kind",
    "clever",
    "cheerful",
    "playful",
    "gentle",
    "careful",
    "silly",
    "happy",
    "friendly",
    "busy",
    "quiet",
    "helpful",
    "funny",
    "thoughtful",
    "sleepy",
    "bouncy",
    "bold",
    "polite",
    "patient",
    "lively",
    "tidy",
    "messy",
    "giggly",
    "dreamy",
    "chatty",
    "sweet",
    "little",
]
COLOURS = [
    "red",
    "blue",
    "green",
    "yellow",
    "orange",
    "purple",
    "pink",
    "white",
    "black",
    "brown",
    "grey",
    "golden",
    "silver",
    "striped",
    "spotted",
]
TOYS = [
    "kite",
    "ball",
    "teddy bear",
    "toy car",
    "doll",
    "toy boat",
    "picture book",
    "drum",
    "scarf",
    "hat",
    "toy train",
    "robot",
    "puppet",
    "yo-yo",
    "whistle",
    "marble",
    "jump rope",
    "spinning top",
    "music box",
    "rag doll",
    "toy dinosaur",
    "stuffed bunny",
    "toy truck",
    "umbrella",
    "backpack",
    "harmonica",
    "box of crayons",
    "notebook",
    "toy plane",
    "magnifying glass",
    "flashlight",
    "sticker book",
    "tambourine",
    "glove",
    "toy rocket",
    "paper crown",
]
# Things that can be shared one or two at a time: (one, many).
SNACKS = [
    ("cookie", "cookies"),
    ("strawberry", "strawberries"),
    ("apple", "apples"),
    ("cherry", "cherries"),
    ("grape", "grapes"),
    ("cupcake", "cupcakes"),
    ("muffin", "muffins"),
    ("carrot", "carrots"),
    ("plum", "plums"),
    ("peach", "peaches"),
    ("cracker", "crackers"),
    ("blueberry", "blueberries"),
    ("sweet", "sweets"),
    ("pear", "pears"),
    ("banana", "bananas"),
    ("raspberry", "raspberries"),
    ("pretzel", "pretzels"),
    ("biscuit", "biscuits"),
    ("orange", "oranges"),
    ("walnut", "walnuts"),
]
# Favourite foods; the ones that are also DISHES can be cooked later in the story.
FOODS = [
    "pancakes",
    "vegetable soup",
    "banana bread",
    "apple pie",
    "pizza",
    "fruit salad",
    "cookies",
    "porridge",
    "muffins",
    "lemonade",
    "spaghetti",
    "ice cream",
    "honey toast",
    "cheese sandwiches",
    "rice pudding",
    "tomato soup",
    "carrot cake",
    "popcorn",
]
FEEL_GOOD = ["happy", "glad", "proud", "excited", "pleased", "cheerful", "delighted"]
FEEL_BAD = ["sad", "upset", "worried", "cross", "gloomy", "grumpy", "disappointed"]
YUMMY = ["yummy", "tasty", "delicious", "sweet", "good", "lovely"]
TOWNS = [
    "a small town by the sea",
    "a little village near the woods",
    "a busy town",
    "a quiet village by a river",
    "a cottage at the edge of a forest",
    "a little house on a hill",
    "a town with a big clock tower",
    "a cabin near the hills",
    "a blue house on a long street",
    "a village with a duck pond",
]
RAINBOW = ["red", "orange", "yellow", "green", "blue", "indigo", "violet"]
DAYS = ["sunny", "bright", "windy", "cold", "warm", "cloudy", "crisp", "quiet", "lovely"]
# Time words that start a later episode.
LATER = [
    "The next day,",
    "Later that week,",
    "A few days later,",
    "On Saturday,",
    "The next morning,",
    "After lunch,",
    "One afternoon,",
    "On Sunday,",
]

# -- the lost toy: places in town (name, things done there, where a toy can be put down) ------

TOWN_PLACES = [
    (
        "bakery",
        ["bought a warm loaf of bread", "ate a sticky bun", "watched the baker make rolls"],
        "counter",
    ),
    (
        "library",
        ["read a book about dragons", "read a book about the moon", "listened to a story"],
        "table",
    ),
    ("park", ["played on the swings", "fed the pigeons", "went down the slide"], "bench"),
    ("pond", ["fed the ducks", "looked at the frogs", "threw pebbles in the water"], "grass"),
    (
        "market",
        ["bought some apples", "tasted some cheese", "bought some flowers for Mom"],
        "fruit stall",
    ),
    ("post office", ["sent a letter to Grandma", "bought some stamps", "posted a card"], "counter"),
    (
        "toy shop",
        ["looked at the toys", "played with a toy train", "saw a huge teddy bear"],
        "shelf",
    ),
    (
        "ice cream shop",
        ["ate strawberry ice cream", "ate chocolate ice cream", "shared a banana split"],
        "table",
    ),
    (
        "playground",
        ["climbed the climbing frame", "played in the sandpit", "rode the seesaw"],
        "steps of the slide",
    ),
    (
        "museum",
        ["looked at the dinosaur bones", "saw an old knight's armour", "looked at the paintings"],
        "bench",
    ),
    ("train station", ["watched the trains come and go", "waved at the train driver"], "bench"),
    ("flower shop", ["smelled the roses", "bought a pot of daisies"], "counter"),
    ("cafe", ["drank hot cocoa", "ate a slice of cake"], "table"),
    ("old bridge", ["watched the boats go by", "played pooh sticks"], "wall"),
    ("school", ["said hello to their teacher", "looked at the class hamster"], "desk"),
    ("beach", ["built a sandcastle", "looked for shells"], "sand"),
]

# -- hide and seek: where (name, hiding spots as "preposition the thing") ----------------------

HIDING_PLACES = {
    "the house": [
        "behind the sofa",
        "under the bed",
        "inside the wardrobe",
        "behind the curtains",
        "under the kitchen table",
        "in the bathtub",
        "behind the door",
        "inside the laundry basket",
    ],
    "the garden": [
        "behind the big tree",
        "under the bushes",
        "inside the shed",
        "behind the flower pots",
        "under the wheelbarrow",
        "behind the fence",
        "inside the old barrel",
    ],
    "the park": [
        "behind the slide",
        "under the bench",
        "inside the tunnel",
        "behind the fountain",
        "up the climbing tree",
        "behind the bandstand",
    ],
}
# A hider gives itself away: "{seeker} heard ..." / "{seeker} saw ...".
CLUES = [
    "heard a little giggle",
    "heard a sneeze",
    "saw a foot sticking out",
    "heard someone breathing",
    "saw something move",
    "heard a tiny squeak",
]

# -- the race --------------------------------------------------------------------------------

COURSES = [
    "to the big oak tree",
    "around the pond",
    "to the top of the hill",
    "to the end of the beach",
    "to the old red gate",
    "across the meadow",
    "to the garden wall",
    "around the playground",
]
# What makes a runner who was in front fall behind.
SLOWDOWNS = [
    "tripped over a root",
    "stopped to tie {r.his} shoe",
    "stopped to look at a butterfly",
    "slipped in a puddle",
    "looked back to wave",
    "ran the wrong way for a moment",
    "got a stone in {r.his} shoe",
    "stopped to pick a flower",
]
PRIZES = ["a gold medal", "a shiny ribbon", "a paper crown", "a big sticker", "a little cup"]

# -- cooking: dish -> (ingredients as (amount, name, what was done with it), how it cooked) ---
# An amount with {n} gets a random count, which the step repeats ("all {n} eggs").

DISHES = {
    "pancakes": (
        [
            ("{n} eggs", "eggs", "cracked all {n} eggs into a big bowl"),
            ("a cup of flour", "flour", "poured in the flour"),
            ("some milk", "milk", "stirred in the milk"),
            ("a spoon of sugar", "sugar", "sprinkled in the sugar"),
            ("a lump of butter", "butter", "melted the butter in the pan"),
        ],
        "They cooked the pancakes in a hot pan and flipped them high in the air.",
    ),
    "vegetable soup": (
        [
            ("{n} carrots", "carrots", "chopped the {n} carrots"),
            ("two potatoes", "potatoes", "peeled the potatoes"),
            ("an onion", "onion", "cut up the onion"),
            ("a bag of peas", "peas", "tipped in the peas"),
            ("a pinch of salt", "salt", "added the salt"),
        ],
        "The soup bubbled on the stove for twenty minutes.",
    ),
    "banana bread": (
        [
            ("{n} bananas", "bananas", "mashed the {n} bananas with a fork"),
            ("two eggs", "eggs", "beat the eggs"),
            ("a cup of flour", "flour", "mixed in the flour"),
            ("some honey", "honey", "poured in the honey"),
            ("a handful of nuts", "nuts", "sprinkled the nuts on top"),
        ],
        "They baked the banana bread in the oven for an hour.",
    ),
    "apple pie": (
        [
            ("{n} apples", "apples", "sliced the {n} apples"),
            ("some pastry", "pastry", "rolled out the pastry"),
            ("a spoon of cinnamon", "cinnamon", "sprinkled on the cinnamon"),
            ("some brown sugar", "sugar", "added the sugar"),
            ("a little milk", "milk", "brushed the top with milk"),
        ],
        "The pie baked in the oven until it was golden brown.",
    ),
    "pizza": (
        [
            ("a ball of dough", "dough", "stretched the dough into a circle"),
            ("some tomato sauce", "tomato sauce", "spread on the tomato sauce"),
            ("a bag of cheese", "cheese", "sprinkled on the cheese"),
            ("{n} mushrooms", "mushrooms", "put the {n} mushrooms on top"),
            ("a green pepper", "pepper", "added slices of the pepper"),
        ],
        "The pizza went into the hot oven for fifteen minutes.",
    ),
    "fruit salad": (
        [
            ("{n} strawberries", "strawberries", "cut the {n} strawberries in half"),
            ("a banana", "banana", "sliced the banana"),
            ("a bunch of grapes", "grapes", "pulled the grapes off the stalk"),
            ("an orange", "orange", "peeled the orange"),
            ("a spoon of honey", "honey", "drizzled the honey over it all"),
        ],
        "They mixed everything in a big glass bowl.",
    ),
    "cookies": (
        [
            ("a cup of flour", "flour", "tipped the flour into the bowl"),
            ("some butter", "butter", "squished in the butter"),
            ("{n} spoons of sugar", "sugar", "added the {n} spoons of sugar"),
            ("an egg", "egg", "cracked in the egg"),
            ("a bag of chocolate chips", "chocolate chips", "stirred in the chocolate chips"),
        ],
        "They rolled the dough into little balls and baked them for ten minutes.",
    ),
    "porridge": (
        [
            ("a cup of oats", "oats", "poured the oats into the pot"),
            ("some milk", "milk", "added the milk"),
            ("a spoon of honey", "honey", "stirred in the honey"),
            ("{n} blueberries", "blueberries", "dropped the {n} blueberries on top"),
        ],
        "The porridge bubbled gently until it was thick and warm.",
    ),
    "lemonade": (
        [
            ("{n} lemons", "lemons", "squeezed the {n} lemons"),
            ("a jug of water", "water", "poured in the water"),
            ("some sugar", "sugar", "stirred in the sugar"),
            ("a tray of ice", "ice", "dropped in the ice"),
        ],
        "They stirred the lemonade until the sugar was gone.",
    ),
    "muffins": (
        [
            ("a cup of flour", "flour", "sifted the flour"),
            ("{n} eggs", "eggs", "whisked the {n} eggs"),
            ("some milk", "milk", "poured in the milk"),
            ("a box of blueberries", "blueberries", "folded in the blueberries"),
        ],
        "They spooned the mix into paper cases and baked them until they rose.",
    ),
}
# Where a missing ingredient is fetched from.
NEIGHBOURS = [
    "the shop on the corner",
    "the market",
    "the neighbour next door",
    "Grandma's house across the street",
    "the little farm shop",
]

# -- a trip: destination -> (ways to get there, things seen, things packed and their use) ---

TRIPS = {
    "the beach": (
        ["bus", "car", "train"],
        [
            "big blue waves",
            "crabs on the rocks",
            "seagulls",
            "a lighthouse",
            "a sailing boat",
            "shells in the sand",
        ],
        [
            ("a sun hat", "The sun was hot, so {hero} put on {hero.his} sun hat."),
            ("a towel", "After a swim, {hero} dried off with {hero.his} towel."),
            (
                "a bucket and spade",
                "{hero} used {hero.his} bucket and spade to build a big sandcastle.",
            ),
            ("a beach ball", "{hero} and {friend} threw the beach ball back and forth."),
            ("some sun cream", "{adult} rubbed some sun cream on {hero}'s nose."),
        ],
    ),
    "the zoo": (
        ["bus", "car", "train"],
        [
            "lions",
            "tall giraffes",
            "noisy monkeys",
            "a sleepy tiger",
            "zebras",
            "penguins",
            "a huge elephant",
        ],
        [
            ("a camera", "{hero} took a picture of the animals with {hero.his} camera."),
            ("a water bottle", "It was hot, so {hero} drank from {hero.his} water bottle."),
            ("a notebook", "{hero} drew the animals in {hero.his} notebook."),
            ("a packed lunch", "At noon, they ate their packed lunch on a bench."),
            ("a map", "{hero} used the map to find the way to the penguins."),
        ],
    ),
    "Grandma's farm": (
        ["car", "train", "tractor"],
        [
            "cows in the field",
            "pink pigs",
            "hens and chicks",
            "a big red barn",
            "sheep on the hill",
            "a farm dog",
        ],
        [
            ("rubber boots", "The mud was deep, so {hero} put on {hero.his} rubber boots."),
            ("a basket", "{hero} collected eggs from the hens in {hero.his} basket."),
            ("an old jumper", "{hero} wore {hero.his} old jumper to help in the barn."),
            ("some carrots", "{hero} fed the carrots to the horses."),
        ],
    ),
    "the mountains": (
        ["car", "train", "bus"],
        [
            "snowy peaks",
            "a waterfall",
            "a mountain goat",
            "an eagle",
            "pine trees",
            "a little wooden hut",
        ],
        [
            ("warm socks", "At the top it was cold, so {hero} pulled on {hero.his} warm socks."),
            ("a map", "When the path split in two, {hero} looked at the map."),
            ("a flask of cocoa", "At the top, they drank the cocoa from the flask."),
            ("binoculars", "{hero} looked at the eagle through {hero.his} binoculars."),
        ],
    ),
    "the lake": (
        ["car", "bike", "boat"],
        ["swans", "fish jumping", "a wooden jetty", "dragonflies", "a rowing boat"],
        [
            (
                "a fishing net",
                "{hero} dipped {hero.his} fishing net in the water and "
                "caught a tiny fish, then let it go.",
            ),
            ("some bread", "{hero} fed the bread to the swans."),
            ("a towel", "After paddling, {hero} dried {hero.his} feet with the towel."),
            ("a kite", "The wind was just right, so {hero} flew {hero.his} kite."),
        ],
    ),
    "the city": (
        ["train", "bus", "car"],
        [
            "tall buildings",
            "a big fountain",
            "red buses",
            "a street musician",
            "a huge clock",
            "pigeons in the square",
        ],
        [
            ("some pocket money", "{hero} spent {hero.his} pocket money on a postcard."),
            ("a camera", "{hero} took a picture of the fountain."),
            ("an umbrella", "When it began to drizzle, {hero} opened {hero.his} umbrella."),
        ],
    ),
    "the fair": (
        ["bus", "car", "bike"],
        ["a big wheel", "a merry-go-round", "candy floss", "a clown", "bright lights"],
        [
            ("some coins", "{hero} used {hero.his} coins to ride the merry-go-round."),
            ("a warm coat", "When it got dark and cold, {hero} put on {hero.his} warm coat."),
            ("a bag", "{hero} put the prize {hero.he} won in {hero.his} bag."),
        ],
    ),
}
VEHICLE_MOVES = {
    "bus": "The bus rumbled along the road.",
    "car": "The car hummed along.",
    "train": "The train went clickety-clack, clickety-clack.",
    "tractor": "The tractor bumped along the lane.",
    "bike": "They pedalled along the path.",
    "boat": "The boat rocked on the water.",
}
FIELD_ANIMALS = [
    ("cow", "cows"),
    ("sheep", "sheep"),
    ("horse", "horses"),
    ("bird", "birds"),
    ("rabbit", "rabbits"),
    ("goat", "goats"),
    ("deer", "deer"),
]

# -- helping a friend: mishap -> (what happens, the cry for help, the talents that solve it) -

MISHAPS = {
    "tree": (
        "the wind blew {victim.his} {thing} up into a tall tree",
        "My {thing} is stuck in the tree!",
        ("climb", "fly"),
    ),
    "roof": (
        "{victim.his} {thing} landed on the roof of the old shed",
        "My {thing} is up on the roof!",
        ("climb", "fly"),
    ),
    "lost": (
        "{victim} dropped {victim.his} {thing} in the tall grass and could not find it",
        "I lost my {thing}!",
        ("sniff",),
    ),
    "broken": (
        "{victim.his} {thing} fell on a rock and broke into two pieces",
        "My {thing} is broken!",
        ("fix",),
    ),
    "water": (
        "{victim.his} {thing} fell into the river and floated away",
        "My {thing} is in the water!",
        ("swim",),
    ),
    "rock": (
        "{victim.his} {thing} rolled under a big heavy rock",
        "My {thing} is under the big rock!",
        ("strong",),
    ),
    "hole": (
        "{victim.his} {thing} fell into a tiny crack in the wall",
        "My {thing} fell into a tiny crack!",
        ("small",),
    ),
    "buried": (
        "{victim.his} {thing} got buried deep in the sand",
        "My {thing} is buried in the sand!",
        ("dig",),
    ),
    "sad": (
        "a big dog barked and {victim} dropped {victim.his} {thing} in the mud",
        "My {thing} is all dirty and I am scared!",
        ("kind",),
    ),
}
# Talent -> what the helper does ({r} is the helper).
RESCUES = {
    "climb": [
        "{r} climbed up, one branch at a time. {r.He} grabbed the {thing} and came down.",
        '"I am good at climbing!" said {r}. {r.He} climbed up and got the {thing}.',
    ],
    "fly": [
        "{r} flew up high, took the {thing} and brought it down.",
        "{r} flapped {r.his} wings and flew up. {r.He} picked up the {thing} and flew back.",
    ],
    "sniff": [
        "{r} sniffed the ground. Sniff, sniff! Soon {r.he} found the {thing}.",
        "{r} put {r.his} nose to the grass and sniffed. {r.He} found the {thing}!",
    ],
    "fix": [
        "{r} got some glue and fixed the {thing}. It was as good as new.",
        '"I can fix it!" said {r}. {r.He} worked very hard and fixed the {thing}.',
    ],
    "swim": [
        "{r} jumped into the river and swam to the {thing}. {r.He} pushed it to the bank.",
        '"I can swim!" said {r}. {r.He} swam fast and brought back the {thing}.',
    ],
    "strong": [
        "{r} was very strong. {r.He} pushed the big rock away, and there was the {thing}.",
        '"I am strong!" said {r}. {r.He} lifted the rock and got the {thing}.',
    ],
    "small": [
        "{r} was very small. {r.He} squeezed into the crack and came back with the {thing}.",
        '"I am small, I can fit!" said {r}. {r.He} wriggled in and got the {thing}.',
    ],
    "dig": [
        "{r} dug and dug with {r.his} paws until {r.he} found the {thing}.",
        '"I am good at digging!" said {r}. Sand flew everywhere, and up came the {thing}.',
    ],
    "kind": [
        '{r} gave {victim} a big hug and said, "Do not be scared. We can wash it together." '
        "They washed the {thing} until it was clean.",
        '{r} held {victim}\'s hand and said, "It is okay." Together they cleaned it.',
    ],
}
# What someone with each talent can do, said by a passer-by who cannot help.
CAN_DO = {
    "climb": "climb",
    "fly": "fly",
    "sniff": "find lost things",
    "fix": "fix things",
    "swim": "swim",
    "strong": "lift heavy things",
    "small": "fit into small places",
    "dig": "dig",
    "kind": "help with that",
}

# -- a lesson: (warning, what was done instead, what happened, how it was put right, lesson) --

LESSONS = [
    (
        "Do not leave your bike out in the rain, or it will get rusty.",
        "left {hero.his} bike on the grass",
        "It rained all night, and in the morning the bike was wet and its chain was rusty.",
        "{adult} helped {hero} oil the chain",
        "put things away",
    ),
    (
        "Hold on tight to your balloon, or it will fly away.",
        "let go of {hero.his} balloon to wave at {friend}",
        "Whoosh! The balloon floated up, up and away.",
        "{friend} gave {hero} one of {friend.his} own balloons",
        "hold on tight",
    ),
    (
        "Do not run near the pond, it is slippery.",
        "ran along the edge of the pond",
        "{hero.He} slipped and fell splash into the mud.",
        "{adult} gave {hero} a warm bath",
        "keep away from the edge of the pond",
    ),
    (
        "Do not eat too many sweets, or your tummy will hurt.",
        "ate one sweet after another",
        "Soon {hero.his} tummy hurt a lot.",
        "{adult} made {hero} a cup of mint tea",
        "stop after one or two sweets",
    ),
    (
        "Water your plant every day, or it will wilt.",
        "forgot to water {hero.his} plant",
        "The plant drooped and its leaves turned brown.",
        "{hero} watered it, and slowly it stood up again",
        "look after {hero.his} plant",
    ),
    (
        "Tie your shoelaces, or you will trip.",
        "ran off with {hero.his} laces undone",
        "{hero.He} tripped and scraped {hero.his} knee.",
        "{adult} put a plaster on the knee",
        "tie {hero.his} laces",
    ),
    (
        "Put the lid back on the paint, or it will dry out.",
        "left the lid off the paint",
        "The next day the paint was hard and dry.",
        "{adult} bought a new pot of paint",
        "put the lids back on",
    ),
    (
        "Close the gate, or {pet} will run away.",
        "left the gate open",
        "{pet} ran out into the lane!",
        "They called and called until {pet} came back",
        "close the gate",
    ),
    (
        "Put your toys away, or someone will step on them.",
        "left {hero.his} blocks on the stairs",
        '{adult} stepped on a block and said, "Ouch!"',
        "{hero} said sorry and put the blocks in the box",
        "put {hero.his} toys away",
    ),
    (
        "Wear your coat, or you will catch a cold.",
        "went out without {hero.his} coat",
        "By evening, {hero.he} was sneezing: Atchoo! Atchoo!",
        "{adult} tucked {hero} up with a hot drink",
        "wear {hero.his} coat",
    ),
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

PLANTS = [
    ("sunflower", "sunflowers", "taller than Dad, with big yellow faces"),
    ("tomato", "tomato plants", "covered in little red tomatoes"),
    ("bean", "bean plants", "climbing up their sticks, full of long green beans"),
    ("pumpkin", "pumpkin plants", "spreading over the ground, with one huge orange pumpkin"),
    ("carrot", "carrots", "ready to pull up, with feathery green tops and orange roots"),
    ("pea", "pea plants", "full of fat green pods"),
    ("daisy", "daisies", "white and yellow, nodding in the wind"),
    ("strawberry", "strawberry plants", "full of sweet red berries"),
    ("radish", "radishes", "round and red and a little bit spicy"),
]

# -- bedtime: (the hero of the bedtime tale, what it did) -------------------------------------

TALES = [
    ("a brave little mouse", "mouse", "sailed across the sea in a teacup"),
    ("a dragon who was afraid of the dark", "dragon", "made friends with a firefly"),
    ("a princess who loved mud", "princess", "won the great puddle-jumping contest"),
    ("a lost star", "star", "found its way back to the sky"),
    ("a tiny snail", "snail", "went all the way round the world"),
    ("a bear who could not sleep", "bear", "counted sheep until the sun came up"),
    ("a knight with a wooden sword", "knight", "rescued a kitten from a tall tower"),
    ("a whale who loved to sing", "whale", "taught the fish a new song"),
    ("a robot who wanted to dance", "robot", "danced at the king's party"),
    ("a little cloud", "cloud", "made it rain on a thirsty garden"),
]
PYJAMAS = [
    "little stars",
    "blue moons",
    "red rockets",
    "yellow ducks",
    "green frogs",
    "pink hearts",
    "tiny boats",
    "white clouds",
]

# Dialogue tags: '"...," said Tom.' becomes '"...," replied Tom softly.' and the like.
DIALOGUE_TAG = re.compile(r'([,.!?])" (said|asked) ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\.')
TAG_VERBS = {
    ",": ["said", "replied", "answered", "whispered", "added"],
    ".": ["said", "replied", "answered", "whispered", "added"],
    "!": ["said", "shouted", "cried", "called", "laughed"],
    "?": ["asked", "wondered", "said"],
}
MANNERS = [
    "softly",
    "with a smile",
    "quietly",
    "happily",
    "loudly",
    "at once",
    "with a nod",
    "slowly",
    "brightly",
    "kindly",
]

# Endings for a story without a bedtime episode.
ENDINGS = [
    "From that day on, {hero} and {friend} were the best of friends.",
    "{hero} smiled. It had been a very good {span}.",
    "And they all lived happily ever after.",
    "{hero} could not wait for the next adventure.",
    "{hero} was tired, but very happy.",
    "That night, {hero} slept with a big smile on {hero.his} face.",
]
