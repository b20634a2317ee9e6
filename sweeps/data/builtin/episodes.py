"""The episodes of a story: each appends paragraphs and one recap phrase; the bedtime
episode and the closing recall them in order."""

from __future__ import annotations

from sweeps.data.builtin.cast import Story, count_phrase, introduce, listing, with_article
from sweeps.data.builtin.words import (
    ANIMALS,
    CAN_DO,
    CLUES,
    COLOURS,
    COUNTING,
    COURSES,
    DISHES,
    ENDINGS,
    FEEL_BAD,
    FEEL_GOOD,
    FIELD_ANIMALS,
    HIDING_PLACES,
    LESSONS,
    MISHAPS,
    NEIGHBOURS,
    NUMBERS,
    ORDINALS,
    PASTIMES,
    PETS,
    PLANTS,
    PRIZES,
    PYJAMAS,
    RAINBOW,
    RESCUES,
    SKILL_WORDS,
    SLOWDOWNS,
    SNACKS,
    TALES,
    TOWN_PLACES,
    TOYS,
    TRIPS,
    VEHICLE_MOVES,
    YUMMY,
)


def _lost_and_found(s: Story) -> None:
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
            steps.append(
                f"{start} {place}, where they {act}. {{hero}} put {{hero.his}} {{toy}} "
                f"down on the {surface} for a moment."
            )
        else:
            steps.append(f"{start} {place}, where they {act}.")
    s.say(
        "{when} {hero} and {friend} went into town. {hero} took {hero.his} {toy} along.",
        *steps,
        when=s.when,
    )
    places = [v[0] for v in visits]
    s.say(
        "When they got home, {hero} looked for {hero.his} {toy}. It was gone!",
        '"Oh no! Where is my {short}?" cried {hero}.',
        '"Let\'s think," said {friend}. "Where did we go today?"',
        '"We went to ' + listing(["the " + p for p in places]) + '," said {hero}.',
        short=toy,
    )
    search = []
    for place, _, _surface in visits[:left_at]:
        search.append(
            s.pick(
                [
                    "They went back to the {p}. The {t} was not there.",
                    "They looked all around the {p}, but there was no {t}.",
                ]
            )
            .replace("{p}", place)
            .replace("{t}", toy)
        )
    place, _, surface = visits[left_at]
    search.append(f'Then {{hero}} remembered. "I put it on the {surface} at the {place}!"')
    search.append(
        s.pick(
            [
                f"They ran to the {place}, and there it was, on the {surface}: "
                "{hero.his} {toy}!",
                f"At the {place}, the {toy} was still on the {surface}, just where "
                "{hero} had left it.",
            ]
        )
    )
    s.say(*search)
    s.say(
        s.pick(
            [
                '{hero} hugged {hero.his} {short}. "I will be more careful," {hero.he} said.',
                '"Thank you for helping me look, {friend}," said {hero}.',
                "{hero} held on to {hero.his} {short} all the way home.",
            ]
        ),
        short=toy,
    )
    s.recap.append(f"found {{hero.his}} {toy} at the {place}")


def _sharing(s: Story) -> None:
    one, many = s.pick(SNACKS)
    have = s.rng.randint(4, 10)
    giver = s.pick([s.adult, "Grandma" if s.adult != "Grandma" else "Grandpa", "the baker"])
    visitors = [s.friend] + [s.someone() for _ in range(s.rng.randint(1, 3))]
    if s.pet and s.rng.random() < 0.3:
        visitors.insert(s.rng.randrange(1, len(visitors) + 1), s.pet)
    opening = ["{when} {giver} gave {hero} {count} in {a_colour} basket."]
    if have <= 8 and s.rng.random() < 0.6:  # counting out loud: a sequence that ends at `have`
        opening.append("{hero} counted them: " + ", ".join(COUNTING[1 : have + 1]) + ".")
    opening.append(
        s.pick(
            [
                '"They look {yum}!" said {hero}.',
                "{hero} was so {good}.",
                '"Thank you!" said {hero}.',
            ]
        )
    )
    s.say(
        *opening,
        when=s.when,
        giver=giver,
        count=count_phrase(have, one, many),
        a_colour=with_article(s.pick(COLOURS)),
        yum=s.pick(YUMMY),
        good=s.pick(FEEL_GOOD),
    )
    fed = []
    for v in visitors:
        arrive = (
            "Then {v} came by."
            if v is s.friend or v is s.pet
            else "Then " + introduce(v) + " came by."
        )
        if have == 0:
            s.say(
                arrive,
                '"May I have one?" asked {v}.',
                '"I am sorry, I have no {many} left," said {hero}. So {hero} gave {v} a '
                "big hug instead.",
                v=v,
                many=many,
            )
            continue
        give = min(have, s.pick((1, 1, 2)))
        have -= give
        fed.append(v.name)
        left = (
            f"Now {{hero}} had {count_phrase(have, one, many)} left."
            if have
            else f"Now {{hero}} had no {many} left."
        )
        s.say(
            arrive,
            s.pick(
                [
                    '"Hello, {hero}! May I have one?" asked {v}.',
                    '"Those look {yum}," said {v}.',
                    "{v} looked at the basket and smiled.",
                ]
            ),
            "{hero} gave {v} {gift}.",
            left,
            s.pick(['"Thank you!" said {v}.', "", '{v} said, "You are kind."']),
            v=v,
            gift=count_phrase(give, one, many),
            yum=s.pick(YUMMY),
        )
    if have:
        s.say(
            "{hero} ate the last "
            + (one if have == 1 else f"{NUMBERS[have]} {many}")
            + " {hero.him}self. Sharing made {hero.him} feel {good}.",
            good=s.pick(FEEL_GOOD),
        )
    else:
        s.say(
            "{hero} had no {many} left, but {hero.he} did not mind. {friend} shared "
            "{friend.his} lunch with {hero.him}, and they laughed together.",
            many=many,
        )
    s.recap.append(f"shared {{hero.his}} {many} with {listing(fed)}")


def _trip(s: Story) -> None:
    place = s.pick(list(TRIPS))
    ways, sights, packs = TRIPS[place]
    way = s.pick(ways)
    packed = s.rng.sample(packs, s.rng.randint(2, min(4, len(packs))))
    s.say(
        "{when} {hero} went on a trip to {place} with {adult} and {friend}. They went by {way}.",
        "Before they left, {hero} packed {hero.his} bag. {hero.He} put in "
        + listing([p[0] for p in packed])
        + ".",
        when=s.when,
        place=place,
        way=way,
    )
    _, many = s.pick(FIELD_ANIMALS)
    n = s.rng.randint(2, 9)
    s.say(
        VEHICLE_MOVES[way],
        s.pick(
            [
                "{hero} looked out of the window and counted {n} {many}.",
                "On the way, they saw {n} {many} in a field.",
            ]
        ),
        s.pick(['"Are we there yet?" asked {friend}.', "", "{hero} sang a song to pass the time."]),
        n=NUMBERS[n],
        many=many,
    )
    seen = s.rng.sample(sights, 3)
    s.say(
        "At last they got to {place}. {hero} felt {good}.",
        "They saw " + listing(seen) + ".",
        *[use for _, use in packed],
        "{hero} was glad {hero.he} had packed so well.",
        place=place,
        good=s.pick(FEEL_GOOD),
    )
    s.say(
        s.pick(
            [
                "On the way home, {hero} fell asleep.",
                "When they got home, {hero} told {pet_or_friend} all about {place}.",
                '"Can we come back soon?" asked {hero} on the way home.',
            ]
        ),
        way=way,
        place=place,
        pet_or_friend=s.pet or s.friend,
    )
    s.recap.append(f"gone to {place} by {way}")


def _race(s: Story) -> None:
    runners = [s.hero, s.friend] + [s.someone() for _ in range(s.rng.randint(1, 2))]
    course = s.pick(COURSES)
    s.say(
        "{when} {hero} and {friend} met "
        + listing([introduce(r) for r in runners[2:]])
        + '. "Let\'s have a race {course}!" said {starter}.',
        'They stood in a line. "Ready, steady, go!" shouted {adult}, and off they ran.',
        when=s.when,
        course=course,
        starter=s.pick(runners),
    )
    order = runners[:]
    s.rng.shuffle(order)  # the finishing order
    leader = s.pick(runners)
    if leader is order[0]:
        s.say("{r} ran fast and was in front from the start. Nobody could catch {r.him}.", r=leader)
    else:
        s.say(
            "At first, {r} was in front. But then {r} " + s.pick(SLOWDOWNS) + ", and {w} ran "
            "past {r.him}.",
            r=leader,
            w=order[0],
        )
    places = [f"{order[0].name} reached the end first."]
    places += [f"{r.name} came {ORDINALS[i + 1]}." for i, r in enumerate(order[1:], 1)]
    prize = s.pick(PRIZES)
    s.say(
        " ".join(places),
        '{adult} gave {w} {prize}. "Well done, {w}!" everyone cheered.',
        s.pick(
            [
                '{last} was a bit sad, but {w} said, "You ran very well."',
                '"Next time I will win," laughed {last}.',
                "Then they all sat on the grass to rest.",
            ]
        ),
        w=order[0],
        last=order[-1],
        prize=prize,
    )
    rank = order.index(s.hero) + 1
    s.recap.append(
        "won a race " + course if rank == 1 else f"come {ORDINALS[rank]} in a race {course}"
    )


def _hide_and_seek(s: Story) -> None:
    where = s.pick(list(HIDING_PLACES))
    players = [s.hero, s.friend] + (
        [s.pet]
        if s.pet and s.rng.random() < 0.5
        else [s.someone() for _ in range(s.rng.randint(0, 1))]
    )
    seeker = s.pick(players)
    hiders = [p for p in players if p is not seeker]
    spots = s.rng.sample(HIDING_PLACES[where], len(hiders) + 1)
    upto = s.rng.randint(5, 20)
    s.say(
        "{when} "
        + listing([p.name if p in (s.hero, s.friend, s.pet) else introduce(p) for p in players])
        + " played hide and seek in {where}.",
        '{seeker} was the seeker. {seeker.He} covered {seeker.his} eyes and counted: "'
        + ", ".join(COUNTING[1 : upto + 1])
        + '! Ready or not, here I come!"',
        when=s.when,
        where=where,
        seeker=seeker,
    )
    s.say(*[f"{p.name} hid {spot}." for p, spot in zip(hiders, spots)])
    found = hiders[:]
    s.rng.shuffle(found)
    looking = []
    if s.rng.random() < 0.6:  # a wrong guess first: the spot nobody chose
        looking.append(f"{{seeker}} looked {spots[-1]}, but nobody was there.")
    for p in found:
        spot = spots[hiders.index(p)]
        looking.append(
            s.pick(
                [
                    "Then {seeker} {clue}. {seeker.He} looked {spot}: there was {p}!",
                    '{seeker} looked {spot}. "Found you, {p}!"',
                ]
            )
            .replace("{clue}", s.pick(CLUES))
            .replace("{spot}", spot)
            .replace("{p}", p.name)
        )
    s.say(
        *looking,
        s.pick(
            [
                "{last} was the best hider of all.",
                "They played again and again until it was time for tea.",
            ]
        ),
        seeker=seeker,
        last=found[-1],
    )
    s.recap.append("played hide and seek in " + where)


def _cooking(s: Story) -> None:
    rng = s.rng
    favourite = s.food in DISHES and rng.random() < 0.5
    dish = s.food if favourite else s.pick(list(DISHES))
    ingredients, cooked = DISHES[dish]
    used = rng.sample(range(len(ingredients)), rng.randint(3, len(ingredients)))
    used.sort()  # recipes keep their order
    n = str(NUMBERS[rng.randint(2, 6)])
    items = [
        (
            ingredients[i][0].replace("{n}", n),
            ingredients[i][1],
            ingredients[i][2].replace("{n}", n),
        )
        for i in used
    ]
    cook = s.pick([s.adult, s.friend])
    why = (
        "because it was {hero.his} favourite food"
        if favourite
        else s.pick(
            [
                "for a picnic",
                "for tea",
                "as a surprise for " + s.adult
                if cook is s.friend
                else "as a surprise for " + s.friend.name,
            ]
        )
    )
    s.say(
        "{when} {hero} and {cook} decided to make {dish} " + why + ".",
        '"We need ' + listing([i[0] for i in items]) + '," said {cook}.',
        when=s.when,
        cook=cook,
        dish=dish,
    )
    if rng.random() < 0.4:  # a missing ingredient, fetched before cooking goes on
        amount, name, _ = s.pick(items)
        s.say(
            '{hero} looked in the cupboard. "Oh no, we have no {name}!"',
            "So {hero} ran to {shop} and came back with {amount}.",
            name=name,
            shop=s.pick(NEIGHBOURS),
            amount=amount,
        )
    steps = ["First, {hero} " + items[0][2] + "."]
    steps += [
        s.pick(["Then {hero.he} ", "Next, {cook} ", "After that, {hero.he} "]) + step + "."
        for _, _, step in items[1:]
    ]
    s.say(*steps, cooked, cook=cook)
    s.say(
        s.pick(["The {dish} smelled {yum}.", "Soon the {dish} was ready."]),
        s.pick(
            [
                '{hero} took a bite. "Mmm!" {hero.he} said.',
                "They ate every last bit.",
                "{hero} saved some for {friend}.",
            ]
        ),
        dish=dish,
        yum=s.pick(YUMMY),
    )
    s.recap.append(f"made {dish} with {cook.name if cook is s.friend else cook}")


def _rainy_day(s: Story) -> None:
    plan = s.pick(
        [
            "go to the park",
            "have a picnic",
            "play football",
            "fly {hero.his} {toy}",
            "ride {hero.his} bike",
            "go to the beach",
        ]
    )
    s.say(
        "{when} {hero} wanted to " + plan + ". But when {hero.he} looked out of the "
        "window, the sky was grey and rain was pouring down.",
        s.pick(
            [
                "Pitter-patter, pitter-patter went the rain.",
                "Boom! went the thunder, far away.",
                "The drops ran down the window.",
            ]
        ),
        '{hero} felt {bad}. "Now I cannot ' + plan.replace("{hero.his}", "my") + '!"',
        when=s.when,
        bad=s.pick(FEEL_BAD),
    )
    games = s.rng.sample(
        [
            "{hero} and {friend} built a fort out of blankets and pillows.",
            "They painted a picture of a {colour} house with a {colour2} door.",
            "They played a board game, and {friend} won twice.",
            "They made a puppet show for {adult}.",
            "{hero} read a story to {pet_or_friend}.",
            "They baked little buns and ate them warm.",
            "They did a puzzle with a hundred pieces.",
        ],
        2,
    )
    s.say(
        s.pick(['"We can play inside," said {adult}.', "Then {friend} came over, dripping wet."]),
        *games,
        colour2=s.pick(COLOURS),
        pet_or_friend=s.pet or s.friend,
    )
    if s.rng.random() < 0.6:  # the rainbow always names its colours in the same order
        # Whether the favourite colour (named in the opening) is in it decides what is said.
        s.say(
            "When the rain stopped, there was a rainbow in the sky. {hero} named all its "
            "colours: " + listing(RAINBOW) + ".",
            '"Look, there is {colour}, my favourite colour!" said {hero}.'
            if s.colour in RAINBOW
            else '"There is no {colour} in a rainbow," said {hero}. "But it is still pretty."',
        )
    s.recap.append("played inside on a rainy day")


def _helping(s: Story) -> None:
    victim = s.pick([s.friend, s.someone()])
    mishap = s.pick(list(MISHAPS))
    what, cry, talents = MISHAPS[mishap]
    thing = s.pick(COLOURS) + " " + s.pick(TOYS)
    intro = "{victim}" if victim is s.friend else introduce(victim)
    s.say(
        "{when} {hero} was playing near the river when {hero.he} met " + intro + ".",
        "{victim} was playing with {victim.his} {thing}. But then, " + what + ".",
        s.pick(
            [
                "{victim} began to cry.",
                "{victim} did not know what to do.",
                "{victim} felt very {bad}.",
            ]
        ),
        '"' + cry + '" {victim} said.',
        when=s.when,
        victim=victim,
        thing=thing,
        bad=s.pick(FEEL_BAD),
    )
    if s.skill_told and s.hero.talent in talents:  # the skill named in the opening
        helper = s.hero
        help_line = (
            "{hero} remembered that {hero.he} was good at "
            + SKILL_WORDS[s.hero.talent]
            + '. "I can help!" {hero.he} said.'
        )
    else:
        if s.rng.random() < 0.5:  # someone whose talent does not fit tries first
            p = s.animal([k for k, t in ANIMALS.items() if t not in talents])
            s.say(
                f'First, {p.name} the {p.kind} came by. "I am sorry, I cannot '
                f'{CAN_DO[p.talent]}," {p.he} said.'
            )
        helper = (
            s.animal([k for k, t in ANIMALS.items() if t in talents])
            if talents != ("kind",)
            else s.someone()
        )
        helper.talent = s.pick(talents)
        help_line = "Just then, " + introduce(helper) + ' came by. "Why are you sad?" asked {r}.'
    s.say(
        help_line,
        s.pick(RESCUES[helper.talent]),
        s.pick(
            [
                '"Thank you, {r}!" said {victim}.',
                "{victim} smiled a big smile.",
                "{victim} was so happy that {victim.he} jumped up and down.",
            ]
        ),
        r=helper,
        victim=victim,
        thing=thing.split(" ", 1)[1],
    )
    s.recap.append(f"helped {victim.name} with {victim.his} {thing}")


def _lesson(s: Story) -> None:
    warning, did, happened, fixed, lesson = s.pick(
        LESSONS if s.pet else [x for x in LESSONS if "{pet}" not in x[0]]
    )
    s.say(
        '{when} {adult} said to {hero}, "' + warning + '"',
        s.pick(
            [
                '"I will," said {hero}.',
                '"Yes, yes," said {hero}, but {hero.he} was not really listening.',
                "{hero} nodded.",
            ]
        ),
        when=s.when,
    )
    s.say(*s.rng.sample(PASTIMES, s.rng.randint(1, 3)))
    s.say(
        "Later, {hero} forgot and " + did + ". " + happened,
        'Then {hero} remembered what {adult} had said: "' + warning + '"',
    )
    s.say(
        fixed[0].upper()
        + fixed[1:]
        + ". "
        + s.pick(
            [
                '{hero} said, "I am sorry. Next time I will listen."',
                "From then on, {hero} always remembered.",
            ]
        )
    )
    s.recap.append("learned to " + lesson)


def _garden(s: Story) -> None:
    seed, plants, grown = s.pick(PLANTS)
    n = s.rng.randint(3, 9)
    s.say(
        "{when} {adult} gave {hero} a packet of " + seed + " seeds.",
        "{hero} dug {n} little holes in the garden and put one seed in each hole. Then "
        "{hero.he} covered them with soil.",
        when=s.when,
        n=NUMBERS[n],
    )
    days = s.rng.randint(2, 6)
    lines = []
    for d in range(1, days):
        lines.append(
            s.pick(
                [
                    "On the {d} day, {hero} watered the seeds. Nothing happened.",
                    "On the {d} day, {hero} watered them again. Still nothing.",
                    "On the {d} day, {hero} looked and looked, but there was nothing to see.",
                ]
            ).replace("{d}", ORDINALS[d])
        )
    up = s.rng.randint(1, n)
    shoots = count_phrase(up, "tiny green shoot", "tiny green shoots")
    lines.append(
        f"On the {ORDINALS[days]} day, {{hero}} saw {shoots}! "
        + (
            "All of the seeds had come up."
            if up == n
            else f"{NUMBERS[n - up].capitalize()} of the {NUMBERS[n]} seeds had not come up yet."
        )
    )
    s.say(*lines)
    s.say(
        "{hero} took care of them every day. After many weeks, the "
        + plants
        + " were "
        + grown
        + ".",
        s.pick(["{hero} felt very {good}.", '"I grew them all by myself!" said {hero}.']),
        good=s.pick(FEEL_GOOD),
    )
    s.recap.append(f"grown {plants} from {NUMBERS[n]} little seeds")


EPISODES = [
    _lost_and_found,
    _sharing,
    _trip,
    _race,
    _hide_and_seek,
    _cooking,
    _rainy_day,
    _helping,
    _lesson,
    _garden,
]


def bedtime_episode(s: Story) -> None:
    """The last episode: the day winds down and the hero recalls every episode, in order."""
    creature, short, deed = s.pick(TALES)
    s.say(
        "That night, {hero} put on {hero.his} pyjamas with " + s.pick(PYJAMAS) + " on them "
        "and brushed {hero.his} teeth.",
        "{adult} read {hero.him} a story about "
        + creature
        + ". In the end, the "
        + short
        + " "
        + deed
        + ".",
        s.pick(["{hero} hugged {hero.his} {toy}.", "{hero} held {hero.his} {toy} close."]),
    )
    goodnight = (
        (
            '"Goodnight, {adult}. Goodnight, {pet}," said {hero}. {pet} answered, "'
            + PETS[s.pet.kind][0]
            + '"'
        )
        if s.pet
        else '"Goodnight, {adult}," said {hero}.'
    )
    s.say(
        goodnight,
        "As {hero.he} fell asleep, {hero} thought about everything {hero.he} had done: "
        "{hero.he} had " + listing(s.recap) + ".",
        "The end.",
    )


def closing(s: Story) -> None:
    lines = []
    if len(s.recap) > 1:
        lines.append("What a busy {span}! {hero} had " + listing(s.recap) + ".")
    lines.append(s.pick(ENDINGS))
    if s.pet and s.rng.random() < 0.5:
        lines.append("{pet} " + PETS[s.pet.kind][1] + '. "' + PETS[s.pet.kind][0] + '"')
    s.say(*lines, span="week" if len(s.recap) > 2 else "day")
