import pytest

from polar.harnesses.missions import parse_mission


@pytest.mark.parametrize("text,goal", [
    ("use the key to open the door and then get to the goal", ["at(goal)"]),
    ("get to the green goal square", ["at(goal)"]),
    ("go to the red ball", ["facing(ball,red)"]),
    ("pick up the purple box", ["carrying(box,purple)"]),
    ("open the yellow door", ["open(door,yellow)"]),
    ("pick up the ball", ["carrying(ball,any)"]),
    ("put the red ball next to the blue key", ["adjacent(ball,red,key,blue)"]),
    ("get the red key from the blue room, unlock the green door and go to the goal", ["at(goal)"]),
])
def test_parse_mission(text, goal):
    assert parse_mission(text) == goal


def test_unparseable_mission():
    assert parse_mission("write a poem about grids") is None
