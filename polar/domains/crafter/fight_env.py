"""`FightEnv`: the Gymnasium env the `fight(foe)` skill is trained on.

Actions: Crafter's first six (noop, move left/right/up/down, do), as `CollectEnv`'s. Use it as a
harness through its entry point: `gym:polar.domains.crafter.fight_env:FightEnv`
(skills/recipes/crafter_fight.yaml). Each episode is one skill call in a real Crafter world:

- a world, drawn and reused as `CollectEnv` does (`episodes_per_world` starts per world);
- a foe (`polar.domains.crafter.fight.FOES`) drawn uniformly, and a start (`staging.stage_foe`):
  the player on the foe's ground (a zombie's grass, sand or path; a skeleton's tunnels), a new
  foe 2-4 cells away in view, a sword drawn (none 40%, wood 30%, stone 20%, iron 10%) and a
  health of 4-9. The foe staged for the previous episode is removed if it still stands.

Staging reads the whole world, as a curriculum does; the policy reads the view only
(`fight.hook_features`'s input). Reward: +1 when the achievement count `defeat_<foe>` rises,
which ends the episode; -1 when the player dies (terminated); a shaping term
`shaping * (d_before - d_after)` on the Manhattan distance to the nearest foe of that kind in
view (12 when none is), except on the winning step (the beaten foe vanishes from view then,
which is no loss); `hit` times the share of the foe's health each hit takes (`hit` in all for a
foe beaten; the first recipe's runs had none, `hit=0`). The episode also ends when no foe of
that kind is in view (where the skill's call ends), and is truncated after `max_steps` (the
skill's step budget).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polar.domains.crafter import fight, view
from polar.domains.crafter.collect_env import MAX_DISTANCE, StagedWorlds
from polar.domains.crafter.staging import stage_foe
from polar.errors import ConfigError

FOE_HEALTH = {"zombie": 5, "skeleton": 3}  # crafter.objects.Zombie / Skeleton at creation


class FightEnv(StagedWorlds):
    """Goal-conditioned `fight(foe)` over Crafter worlds, for training the skill."""

    metadata = {"render_modes": [], "observation_kinds": fight.OBSERVATION_KINDS}

    def __init__(self, foes: list[str] | None = None, max_steps: int = 60, shaping: float = 0.05,
                 hit: float = 0.5, episodes_per_world: int = 32) -> None:
        names = list(foes or fight.FOES)
        unknown = [n for n in names if n not in fight.FOES]
        if unknown:
            raise ConfigError(f"FightEnv: unknown foes {unknown}; known: {', '.join(fight.FOES)}")
        if max_steps < 1 or episodes_per_world < 1:
            raise ConfigError(f"FightEnv: need max_steps >= 1 and episodes_per_world >= 1 "
                              f"(got {max_steps}, {episodes_per_world})")
        self.foes, self.max_steps, self.shaping, self.hit = names, int(max_steps), float(shaping), float(hit)
        super().__init__(episodes_per_world)
        self.observation_space = fight.observation_space()
        self.foe = names[0]
        self._staged: Any = None
        self._steps = 0
        self._distance = MAX_DISTANCE
        self._defeated = 0

    def _new_world(self, seed: int) -> None:
        super()._new_world(seed)
        self._staged = None

    def _stage(self, foe: str) -> bool:
        self._staged = stage_foe(self.env, foe, self.np_random)
        return self._staged is not None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._new_world(seed)
        if self._staged is not None and self._staged.health > 0 and self._staged in self.env._world.objects:
            self.env._world.remove(self._staged)
        self.foe = self._start(self.foes, str(options["foe"]) if options and "foe" in options else None, self._stage)
        self._steps = 0
        self._defeated = self._count()
        obs = self._observe()
        self._distance = self._nearest(obs["grid"])
        return obs, {"foe": self.foe}

    def _count(self) -> int:
        return int(self.env._player.achievements[f"defeat_{self.foe}"])

    def _observe(self) -> dict[str, np.ndarray]:
        p = self.env._player
        sem = view.local_view(self.env._world, (int(p.pos[0]), int(p.pos[1])))
        return fight.features(sem, view.facing_index(p.facing), self.foe, int(p.inventory["health"]),
                              fight.damage(dict(p.inventory)))

    def _nearest(self, grid: np.ndarray) -> int:
        cells = fight.in_view(grid, self.foe)
        if not len(cells):
            return MAX_DISTANCE
        return int(np.abs(cells - np.array(view.CENTRE)).sum(axis=1).min())

    def _faced_foe(self) -> Any:
        """The foe of this episode's kind on the cell the player faces (the one `do` hits)."""
        p, world = self.env._player, self.env._world
        x, y = (int(v) for v in p.pos + p.facing)
        if not (0 <= x < world.area[0] and 0 <= y < world.area[1]):
            return None
        _, obj = world[x, y]
        return obj if obj is not None and view.object_name(obj) == self.foe else None

    def step(self, action: Any):
        faced = self._faced_foe()
        health = faced.health if faced is not None else 0
        self.env.step(int(action))
        self._steps += 1
        obs = self._observe()
        dead = self.env._player.health <= 0
        won = self._count() > self._defeated
        distance = self._nearest(obs["grid"])
        # a beaten foe leaves the view in the step it falls: the win is +1, not +1 less that jump
        shaped = 0.0 if won else self.shaping * (self._distance - distance)
        # each hit: its share of the foe's health (Zombie 5, Skeleton 3), `hit` in all per foe
        struck = 0.0 if faced is None else self.hit * max(health - max(faced.health, 0), 0) / FOE_HEALTH[self.foe]
        reward = (1.0 if won else 0.0) - (1.0 if dead else 0.0) + shaped + struck
        self._distance = distance
        # the skill's call ends when no foe of its kind is in view: so does the episode
        terminated = won or dead or distance == MAX_DISTANCE
        truncated = not terminated and self._steps >= self.max_steps
        return obs, float(reward), terminated, truncated, {"success": bool(won), "died": bool(dead)}
