import pytest

from polar.domains.minigrid.missions import parse_mission


@pytest.mark.parametrize("text,goal", [
    ("use the key to open the door and then get to the goal", ["at(goal)"]),
    ("get to the green goal square", ["at(goal)"]),
    ("go to the red ball", ["facing(ball,red)"]),
    ("pick up the purple box", ["carrying(box,purple)"]),
    ("open the yellow door", ["open(door,yellow)"]),
    ("pick up the ball", ["carrying(ball,any)"]),
    ("pick up a green object", ["carrying(any,green)"]),  # BabyAI-PickupDist: a colour, any type
    ("go to the grey object", ["facing(any,grey)"]),
    ("put the red ball next to the blue key", ["adjacent(ball,red,key,blue)"]),
    ("get the red key from the blue room, unlock the green door and go to the goal", ["at(goal)"]),
])
def test_parse_mission(text, goal):
    assert parse_mission(text) == goal


@pytest.mark.parametrize("text", [
    "write a poem about grids",
    "go to a red door and go to a purple door",  # BabyAI-GoToSeq: a sequence of ends
    "pick up a purple ball and open a red door",
    "put the red box next to a grey door and open a purple door after you pick up a key",  # BossLevel
])
def test_unparseable_mission(text):
    assert parse_mission(text) is None


@pytest.mark.parametrize(("text", "words"), [
    ("go to the door the mission names", ["mission", "names"]),
    ("use the key to open the door and then get to the goal", []),  # DoorKey's means: read
    ("grab the key, unlock the door, then head for the green square",
     ["grab", "key", "head", "for", "green", "square"]),
    ("pick up the blue key and then go to the goal", []),
])
def test_unparsed_words_are_what_the_mission_parser_drops(text, words):
    from polar.domains.minigrid.missions import unparsed_words

    assert unparsed_words(text) == words
