"""MiniGrid: the harness adapter (`harness`), its observations (`obs`), missions, predicates and
state (`state`), the observation-memory reader (`memory_reader`), and its skills: `goto`
(features, hooks, training env, measurement), the one-action primitives and the memory skills."""

from polar.domains.registry import Domain

DOMAIN = Domain(
    name="minigrid",
    harness="polar.domains.minigrid.harness:MiniGridHarness",
    packages=("gymnasium", "minigrid"),
    check_id="polar.domains.minigrid.harness:check_id",
    registered_ids="polar.domains.minigrid.harness:registered_ids",
    id_help="minigrid:<EnvId>",
    full_observation={"full_grid": True},
    planner_hints={"missions": "polar.domains.minigrid.missions"},
)
