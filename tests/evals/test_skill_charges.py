"""A skill's pretraining is charged only to the cells whose agent could call it on that
harness: a CartPole policy accepting every harness id costs a planner nothing on a grid game
(whose observations it cannot read), and its 20k env steps on CartPole, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar.domains.minigrid.primitives import install_primitives
from polar.evals.planner_agent import skill_charges
from polar.evals.runner import run_suite
from polar.harnesses.registry import make_harness
from polar.skills.store import SkillLibrary
from tests.skills.conftest import tiny_policy

GRID, CARTPOLE = "minigrid:MiniGrid-DoorKey-5x5-v0", "gym:CartPole-v1"


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("skills")
    lib = SkillLibrary(root)
    install_primitives(lib)  # minigrid:* primitives, no training cost
    with make_harness(CARTPOLE) as h:
        policy = tiny_policy(obs_space=h.observation_space, act_space=h.action_space)
    lib.register_policy(policy, name="balance", description="Balance the pole upright.", harnesses=["*"],
                        termination={"predicates": ["at(goal)"]},
                        provenance={"env_steps": 20000, "trained_on": [CARTPOLE]})
    return root


def test_charges_follow_what_the_agent_is_offered(library: Path) -> None:
    lib = SkillLibrary(library)
    with make_harness(GRID) as grid, make_harness(CARTPOLE) as cart:
        on_grid, _ = skill_charges(lib, grid.spec)
        on_cart, listing = skill_charges(lib, cart.spec)
    assert "skill:balance@1" not in on_grid and sum(on_grid.values()) == 0
    assert "skill:pickup@1" in on_grid  # the primitives are offered there (at no cost)
    assert on_cart == {"skill:balance@1": 20000} and listing[0]["trained_on"] == [CARTPOLE]


def test_the_symbolic_planners_ledger_is_charged_only_where_the_skill_fits(library: Path, tmp_path: Path) -> None:
    suite = {
        "name": "charges",
        "agents": [{"name": "symbolic", "kind": "planner", "planner": "symbolic", "skills": str(library)}],
        "harnesses": [{"id": GRID, "max_steps": 20}, {"id": CARTPOLE, "max_steps": 20}],
        "seeds": [0],
        "episodes": 1,
    }
    res = run_suite(suite, tmp_path, progress=False)
    rows = {r.harness: r for r in res.rows}
    assert rows["DoorKey-5x5"].train_env_steps == 0 and rows["DoorKey-5x5"].ledger.pretrain_env_steps == 0
    assert rows["CartPole-v1"].train_env_steps == 20000
    assert {t.agent: t.train_env_steps for t in res.totals} == {"symbolic": 20000}


def test_skills_sharing_one_policys_weights_are_charged_once(tmp_path: Path) -> None:
    """One goal-conditioned policy registered as several skills (Crafter's collect_*) was
    trained once: the first skill carries its env steps, the others none."""
    lib = SkillLibrary(tmp_path)
    with make_harness(CARTPOLE) as h:
        policy = tiny_policy(obs_space=h.observation_space, act_space=h.action_space)
        other = tiny_policy(obs_space=h.observation_space, act_space=h.action_space, seed=1)
        for name, p in (("left", policy), ("right", policy), ("apart", other)):
            lib.register_policy(p, name=name, description=f"{name}.", harnesses=["*"],
                                termination={"predicates": ["at(goal)"]},
                                provenance={"env_steps": 20000, "trained_on": [CARTPOLE]})
        charges, listing = skill_charges(lib, h.spec)
    assert sum(charges.values()) == 40000 and "skill:apart@1" in charges
    shared = [x for x in listing if "shares_weights_with" in x]
    assert len(shared) == 1 and shared[0]["env_steps"] == 0
