"""`crafter:`: Crafter (Hafner 2021), the open-world survival benchmark, as a harness.

The observation is Crafter's own, split into its parts, plus the agent's own view read as
cells (polar/domains/crafter/view.py): `image` (the 64x64 RGB frame: the 9x7 local view above
the inventory), `semantic` (material and object of each of the 9x7 view cells), `inventory`
(12 item counts), `vitals` (health, food, drink, energy, 0-9), `facing`, `sleeping` and
`daylight`. Everything in it is what the frame shows; nothing outside the view window reaches
an agent. `pixels_only: true` gives the frame alone (the paper's pure-RL observation).

Episodes end when the player dies (terminated) or after `length` steps (truncated; Crafter's
standard 10,000). Reward is Crafter's: +1 the first time each of the 22 achievements is
unlocked in an episode, +-0.1 per point of health gained or lost. Crafter has no success: an
episode is scored by its achievements (polar/domains/crafter/scores.py), which the harness
reports per episode through `episode_stats()`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from polar.domains.crafter import view
from polar.domains.crafter.state import PREDICATE_VOCABULARY, gained_items, view_predicates
from polar.errors import HarnessError
from polar.harnesses.base import Harness, HarnessSpec, StepResult, SymbolicObject, SymbolicState
from polar.harnesses.spaces import HARNESS_SAMPLER, sampler_seed, space_to_spec

ENV_IDS = ("", "Crafter")  # `crafter:` and `crafter:Crafter` name the same world
STANDARD_LENGTH = 10_000  # Crafter's episode length (the paper's and BALROG's)
ACHIEVEMENTS = (
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling", "collect_stone",
    "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow", "eat_plant", "make_iron_pickaxe",
    "make_iron_sword", "make_stone_pickaxe", "make_stone_sword", "make_wood_pickaxe", "make_wood_sword",
    "place_furnace", "place_plant", "place_stone", "place_table", "wake_up",
)
MISSION = "unlock as many of Crafter's 22 achievements as you can"


def check_id(harness_id: str, env_id: str) -> None:
    from polar.harnesses.registry import UnknownHarness

    if env_id not in ENV_IDS:
        raise UnknownHarness(f"unknown Crafter world {harness_id!r}: use crafter: (or crafter:Crafter)")


def registered_ids() -> list[str]:
    """Crafter registers no gymnasium id (it predates gymnasium): nothing to claim."""
    return []


def _seeded_env_class() -> type:
    """crafter.Env whose world is a function of its seed: Crafter keeps each chunk's creatures in
    a set, ordered by memory address, and despawns `creatures[random index]` of it, so the same
    seed gave different worlds from run to run. Handing it the creatures in position order
    (one creature per cell) keeps the same draws, in a fixed order."""
    import crafter

    class SeededEnv(crafter.Env):
        def _balance_chunk(self, chunk: Any, objs: Any) -> None:
            super()._balance_chunk(chunk, sorted(objs, key=lambda o: (int(o.pos[0]), int(o.pos[1]))))

    return SeededEnv


def _observation_space(pixels_only: bool, odometry: bool = False) -> gym.spaces.Space:
    image = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
    if pixels_only:
        return gym.spaces.Dict({"image": image})
    pose = {"pose": gym.spaces.Box(0, 63, (2,), np.int64)} if odometry else {}
    return gym.spaces.Dict({
        **pose,
        "image": image,
        "semantic": gym.spaces.Box(0, max(len(view.MATERIALS), len(view.OBJECTS)) - 1, (*view.VIEW, 2), np.uint8),
        "inventory": gym.spaces.Box(0, 9, (len(view.ITEMS),), np.int64),
        "vitals": gym.spaces.Box(0, 9, (len(view.VITALS),), np.int64),
        "facing": gym.spaces.Discrete(len(view.FACING)),
        "sleeping": gym.spaces.Discrete(2),
        "daylight": gym.spaces.Box(0.0, 1.0, (1,), np.float32),
    })


class CrafterHarness(Harness):
    """Crafter's `Env`, reset to the world of `seed` (the same seed, the same world)."""

    def __init__(self, env_id: str = "", description: str | None = None, length: int = STANDARD_LENGTH,
                 reward: bool = True, pixels_only: bool = False, start: str | None = None,
                 odometry: bool = False) -> None:
        import crafter

        from polar.domains.crafter.collect import TARGETS
        from polar.domains.crafter.fight import FOES

        if env_id not in ENV_IDS:
            raise HarnessError(f"unknown Crafter world 'crafter:{env_id}': use crafter: (or crafter:Crafter)")
        if type(length) is not int or length < 1:
            raise HarnessError(f"crafter:{env_id}: length must be an integer >= 1, got {length!r}")
        if start is not None and start not in (*TARGETS, *FOES):
            raise HarnessError(f"crafter:{env_id}: start must be one of {', '.join((*TARGETS, *FOES))} or unset, "
                               f"got {start!r}")
        self.env = _seeded_env_class()(length=length, reward=reward, seed=0)
        # A collect skill's start (polar.domains.crafter.staging.stage): measuring a skill
        # from the states it is meant for, e.g. `collect_stone` next to stone, holding a pickaxe;
        # a fight's (staging.stage_foe): a zombie or skeleton 2-4 cells away, a sword drawn.
        self.start = start
        self.pixels_only = pixels_only
        if odometry and pixels_only:
            raise HarnessError(f"crafter:{env_id}: odometry needs the semantic view: not with pixels_only")
        # The player's own position (`pose`), declared in the observation: what the agent's memory
        # places each view by (polar/domains/crafter/memory_reader.py). Off by default, so
        # the observation (and every existing cell's key) is unchanged.
        self.odometry = bool(odometry)
        self._observation_space = _observation_space(pixels_only, self.odometry)
        self._action_space = gym.spaces.Discrete(len(crafter.constants.actions))
        self._seeded = False
        self._last: dict[str, Any] | None = None
        self._gained: list[str] = []  # counts the last step raised (gained(ITEM))
        self.steps = 0  # steps taken this episode (the agent's own count; the memory reader's clock)
        self._reader: Any = None  # the memory reader, made once (it keeps the agent's plant record)
        self.spec = HarnessSpec(
            id=f"crafter:{env_id}",
            description=description or _describe(length, reward, pixels_only) + (
                " pose: the player's own cell (x, y) in the 64x64 world, its odometry, which the agent's "
                "memory places each view by." if self.odometry else ""),
            observation_space=space_to_spec(self._observation_space),
            action_space=space_to_spec(self._action_space),
            action_meanings=list(crafter.constants.actions),
            reward_range=(-0.9, 1.1) if reward else (0.0, 0.0),
            max_steps=length,
            predicate_vocabulary=PREDICATE_VOCABULARY,
            extra={"observation_kinds": {"image": "image"} if pixels_only
                   else {"image": "image", "semantic": "index_grid"},
                   "achievements": list(ACHIEVEMENTS)},
        )

    @property
    def observation_space(self) -> gym.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.Space:
        return self._action_space

    # --- episode --------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if options:
            raise HarnessError(f"{self.spec.id}: reset takes no options, got {sorted(options)}")
        if seed is not None:
            # Crafter seeds episode k's world with hash((seed, k)): restart the count, so a seed
            # names one world whatever ran before it.
            self.env._seed, self.env._episode = int(seed), 0
            if not self._seeded:
                self._action_space.seed(sampler_seed(seed, HARNESS_SAMPLER))
                self._seeded = True
        frame = self.env.reset()
        self._last = None  # a new episode: nothing was gained by a step
        self.steps = 0
        if self.start is not None:
            from polar.domains.crafter.fight import FOES
            from polar.domains.crafter.staging import stage, stage_foe

            rng = np.random.default_rng([self.env._seed, self.env._episode])
            staged = stage_foe(self.env, self.start, rng) if self.start in FOES else stage(self.env, self.start, rng)
            if not staged:
                raise HarnessError(f"{self.spec.id}: world of seed {self.env._seed} offers no start for {self.start!r}")
            frame = self.env.render()
        return self._observe(frame), {}

    def step(self, action: Any) -> StepResult:
        if self.env._player is None:
            raise HarnessError(f"{self.spec.id}: step before reset")
        a = int(action)
        if not 0 <= a < self._action_space.n:
            raise HarnessError(f"{self.spec.id}: action {action!r} outside 0..{self._action_space.n - 1}")
        frame, reward, done, info = self.env.step(a)
        self.steps += 1
        dead = self.env._player.health <= 0
        # Crafter's info holds the whole world's semantic map and the player's position: neither
        # is in the view, so neither leaves the harness. Flat values only: a vector env's info
        # batches them (the achievements come through `episode_stats()`).
        out = {"discount": float(info["discount"]),
               "achievements_unlocked": sum(1 for k in ACHIEVEMENTS if info["achievements"][k] > 0)}
        return self._observe(frame), float(reward), bool(dead), bool(done and not dead), out

    def _observe(self, frame: np.ndarray) -> dict[str, Any]:
        obs: dict[str, Any] = {"image": np.ascontiguousarray(frame, dtype=np.uint8)}
        if not self.pixels_only:
            p = self.env._player
            inv = p.inventory
            obs.update(
                semantic=view.local_view(self.env._world, (int(p.pos[0]), int(p.pos[1]))),
                inventory=np.array([inv[k] for k in view.ITEMS], dtype=np.int64),
                vitals=np.array([inv[k] for k in view.VITALS], dtype=np.int64),
                facing=view.facing_index(p.facing),
                sleeping=int(p.sleeping),
                daylight=np.array([self.env._world.daylight], dtype=np.float32),
            )
            if self.odometry:
                obs["pose"] = np.array([int(p.pos[0]), int(p.pos[1])], dtype=np.int64)
            self._gained = gained_items(self._last, obs)
            self._last = obs
        return obs

    def episode_stats(self) -> dict[str, Any]:
        """The current episode's achievements: name -> times unlocked (0: never)."""
        p = self.env._player
        return {} if p is None else {"achievements": {k: int(p.achievements[k]) for k in ACHIEVEMENTS}}

    def close(self) -> None:
        self._last = None

    def capabilities(self) -> set[str]:
        return {"memory_reader", "plants"} if self.odometry else set()

    def capability(self, name: str) -> Any:
        """`"memory_reader"` (with odometry): reads each observation into the agent's memory;
        `"plants"`: that reader's count of each seen plant's growth (polar.domains.crafter.plant),
        from the agent's own pose, for the skills that tend plants."""
        if name in ("memory_reader", "plants") and self.odometry:
            from polar.domains.crafter.memory_reader import CrafterReader

            if self._reader is None:
                self._reader = CrafterReader(self)
            return self._reader if name == "memory_reader" else self._reader.plants
        return super().capability(name)

    # --- planner views -------------------------------------------------------------------

    def render_text(self, obs: dict[str, Any]) -> str:
        if "semantic" not in obs:  # the frame alone: traces and pages get a line, not 12k pixel values
            return f"(a 64x64 RGB frame; pixels_only: no text view) step {self.env._step}"
        return view.render_view(obs)

    def symbolic_state(self) -> SymbolicState | None:
        """Predicates over the last observation (the view) and the achievements the agent has
        unlocked itself this episode; None with `pixels_only`."""
        if self.pixels_only:
            return None  # the frame alone: no cells to read predicates from
        if self._last is None:
            raise HarnessError(f"{self.spec.id}: no symbolic state before reset")
        obs = self._last
        things = view.visible_things(obs["semantic"])
        preds = view_predicates(obs, self.episode_stats()["achievements"], self._gained)
        objects = [SymbolicObject(type=k, pos=offsets[0]) for k, offsets in things.items()]
        return SymbolicState(
            predicates=preds, goal=[], objects=objects, mission=MISSION,
            agent={"facing": view.FACING[int(obs["facing"])],
                   "inventory": {k: int(n) for k, n in zip(view.ITEMS, obs["inventory"], strict=True)},
                   "vitals": {k: int(v) for k, v in zip(view.VITALS, obs["vitals"], strict=True)}},
        )


def _describe(length: int, reward: bool, pixels_only: bool) -> str:
    seen = ("Observation: image, the 64x64 RGB frame alone (the 9x7 cells around the player above "
            "two rows of inventory icons)." if pixels_only else
            "Observation: image (the 64x64 RGB frame: the 9x7 cells around the player above two rows "
            "of inventory icons); semantic, the same 9x7 view as cells [x right, y down] of (material, "
            "object) ids, the player at (4, 3); inventory (12 item counts); vitals (health, food, drink, "
            "energy, 0-9); facing (0 left, 1 right, 2 up, 3 down); sleeping; daylight (0 night to 1 day).")
    return (
        "Crafter: an open 64x64 world of grass, sand, water, trees, stone, coal, iron, diamonds and "
        "lava, with cows, zombies (on grass, more at night) and skeletons (in tunnels). Collect "
        "wood and stone, place a table and a furnace, make wood, stone and iron pickaxes and swords, "
        "eat, drink and sleep to keep health, food, drink and energy up. Moving into a cell faces it; "
        "`do` acts on the faced cell (collect, attack, eat, drink). " + seen + " "
        + ("Reward +1 for each of the 22 achievements unlocked for the first time in an episode, "
           "+-0.1 per health point gained or lost. " if reward else "No reward. ")
        + f"The episode ends when health reaches 0 (terminated) or after {length} steps (truncated). "
        "Score: the achievements' success rates (Crafter score, BALROG progression)."
    )
