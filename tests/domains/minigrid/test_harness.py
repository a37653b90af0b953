"""MiniGrid predicates must match the grid in scripted situations."""

import numpy as np
from minigrid.core.actions import Actions
from minigrid.core.world_object import Ball, Key, Wall

from polar.domains.minigrid.harness import DIR_VECTORS
from polar.harnesses import make_harness


def _face(h, target):
    """Turn the agent (without moving) until it faces `target` if adjacent."""
    u = h.capability("grid")
    for _ in range(4):
        dx, dy = DIR_VECTORS[u.agent_dir]
        if (u.agent_pos[0] + dx, u.agent_pos[1] + dy) == tuple(target):
            return
        h.step(Actions.left)
    raise AssertionError("target not adjacent")


def _empty_with(objs):
    h = make_harness("minigrid:MiniGrid-Empty-6x6-v0")
    h.reset(seed=0)
    u = h.capability("grid")
    u.agent_pos = np.array((2, 2))
    u.agent_dir = 0  # east
    for pos, obj in objs:
        u.grid.set(*pos, obj)
    return h


def test_pickup_key_gives_carrying():
    h = _empty_with([((3, 2), Key("yellow"))])
    s = h.symbolic_state()
    assert "facing(key,yellow)" in s.predicates
    assert "next_to(key,yellow)" in s.predicates
    assert not any(p.startswith("carrying") for p in s.predicates)
    h.step(Actions.pickup)
    s = h.symbolic_state()
    assert "carrying(key,yellow)" in s.predicates
    assert "facing(key,yellow)" not in s.predicates
    assert s.agent["carrying"] == {"type": "key", "color": "yellow"}


def test_doorkey_scripted_solution_predicates():
    h = make_harness("minigrid:MiniGrid-DoorKey-5x5-v0")
    obs, _ = h.reset(seed=0)
    s = h.symbolic_state()
    assert s.goal == ["at(goal)"]
    door = next(o for o in s.objects if o.type == "door")
    key = next(o for o in s.objects if o.type == "key")
    assert f"locked(door,{door.color})" in s.predicates
    # walk to the key with a BFS over the grid, pick it up, open the door, reach the goal
    from collections import deque

    u = h.capability("grid")

    def goto_adjacent(target, through_doors=False):
        start = tuple(int(v) for v in u.agent_pos)
        prev = {start: None}
        q = deque([start])
        goal_cell = None
        while q:
            c = q.popleft()
            if abs(c[0] - target[0]) + abs(c[1] - target[1]) == 1:
                goal_cell = c
                break
            for dx, dy in DIR_VECTORS:
                n = (c[0] + dx, c[1] + dy)
                cell = u.grid.get(*n)
                ok = cell is None or cell.can_overlap() or (through_doors and cell.type == "door" and cell.is_open)
                if n not in prev and ok:
                    prev[n] = c
                    q.append(n)
        path = []
        while goal_cell != start:
            path.append(goal_cell)
            goal_cell = prev[goal_cell]
        for cell in reversed(path):
            _face(h, cell)
            h.step(Actions.forward)
        _face(h, target)

    goto_adjacent(key.pos)
    assert f"facing(key,{key.color})" in h.symbolic_state().predicates
    h.step(Actions.pickup)
    assert f"carrying(key,{key.color})" in h.symbolic_state().predicates
    goto_adjacent(door.pos)
    h.step(Actions.toggle)
    s = h.symbolic_state()
    assert f"open(door,{door.color})" in s.predicates
    assert f"locked(door,{door.color})" not in s.predicates
    goal = next(o for o in s.objects if o.type == "goal")
    goto_adjacent(goal.pos, through_doors=True)
    _obs, r, term, _trunc, info = h.step(Actions.forward)
    assert term and r > 0 and info["success"] is True


def test_adjacent_objects_and_render_text():
    h = _empty_with([((3, 2), Ball("red")), ((4, 2), Key("blue"))])
    s = h.symbolic_state()
    assert "adjacent(ball,red,key,blue)" in s.predicates
    obs = h.capability("grid").gen_obs()
    text = h.render_text({"image": obs["image"], "direction": obs["direction"], "mission": "x"})
    assert "red ball: 1 ahead" in text and "blue key: 2 ahead" in text
    assert "Carrying: nothing" in text


def test_truncation_reports_no_success():
    h = make_harness("minigrid:MiniGrid-Empty-5x5-v0", max_steps=3)
    h.reset(seed=0)
    for _ in range(3):
        _, _, term, trunc, info = h.step(Actions.left)
    assert trunc and not term and info["success"] is False


def test_repeated_colours_add_positions_to_predicates():
    """KeyCorridorS3R3 (seed 0) has two purple doors and three yellow ones: their predicates
    also come with the door's cell; the grey and red doors' do not."""
    h = make_harness("minigrid:MiniGrid-KeyCorridorS3R3-v0")
    h.reset(seed=0)
    preds = set(h.symbolic_state().predicates)
    assert {"locked(door,purple)", "locked(door,purple,4,5)", "closed(door,purple,5,2)",
            "closed(door,yellow,2,3)", "closed(door,yellow,4,3)", "closed(door,yellow,1,4)"} <= preds
    assert "closed(door,purple,4,5)" not in preds  # that one is locked
    # the ball is behind the locked purple door, named by its cell too; the key behind the red door
    assert {"behind(ball,purple,door,purple)", "behind(ball,purple,door,purple,4,5)",
            "in_way(door,purple,4,5)", "behind(key,purple,door,red)", "in_way(door,red)"} <= preds
    assert "closed(door,grey)" in preds and not any(p.startswith("closed(door,grey,") for p in preds)
    h.close()


def test_drop_cuts_names_what_a_drop_ahead_would_cut_off():
    h = _empty_with([((3, 2), Ball("red"))])
    u = h.capability("grid")
    u.grid.set(3, 2, None)
    for y in range(1, 5):  # a wall with one gap at (3,2), right ahead of the agent
        if y != 2:
            u.grid.set(3, y, Wall())
    u.grid.set(4, 3, Key("blue"))  # beyond the gap
    s = h.symbolic_state()
    assert {"front_clear", "drop_cuts(key,blue)", "reachable(key,blue)"} <= set(s.predicates)
    assert "front_free" not in s.predicates
    h.step(Actions.left)  # facing north: a free cell
    assert {"front_clear", "front_free"} <= set(h.symbolic_state().predicates)
