"""`polar compare` and `polar eval` (`polar prompts compare` lives with the prompt commands).

Heavy imports (torch, ray, matplotlib) happen inside the commands so `polar --help` stays fast.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from polar.errors import ConfigError
from polar.sandboxes import SANDBOX_HELP

if TYPE_CHECKING:
    from polar.evals.suite import SuiteHarness

FRESH_HELP = "Reuse no finished cell from --out: delete them (and the training runs) and run all."


def compare_cmd(
    suite: Annotated[str, typer.Argument(help="Suite YAML path, or a name under evals/ (e.g. demo).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir (default: runs/evals/<suite name>).")] = None,
    workers: Annotated[int | None, typer.Option(help="Ray workers (0: in-process) (default: the suite's).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help=FRESH_HELP)] = False,
    agents: Annotated[str | None, typer.Option(
        "--agents", help="Run only these agents' missing cells (comma-separated names), e.g. a new arm; "
                         "the report still shows every finished cell and lists the rest as missing.")] = None,
) -> None:
    """Run an eval suite and write results.json, report.md, plots, report.html.

    A cell (agent x harness x seed) finished by an earlier run into --out is reused when
    nothing that decides its result changed: the suite's fields, the planner profile and its
    prompt templates, the skill library and its hooks, the training recipe or checkpoint, the
    harness spec and a connector game's source files. The summary says how many were reused."""
    from polar.evals.comparison import compare, default_out_dir
    from polar.evals.suite import load_suite

    s = load_suite(suite)
    names = None if agents is None else [a.strip() for a in agents.split(",") if a.strip()]
    compare(s, out or default_out_dir(s), workers=workers, fresh=fresh, agents=names)


def eval_cmd(
    harness: Annotated[str, typer.Argument(help="Harness id, e.g. minigrid:MiniGrid-DoorKey-8x8-v0.")],
    agent: Annotated[str, typer.Option(help="random | planner | pure_rl")] = "random",
    planner: Annotated[str | None, typer.Option(help="Planner profile (agent=planner).")] = None,
    skills: Annotated[str | None, typer.Option(help="Skill library dir (agent=planner).")] = None,
    sandbox: Annotated[str, typer.Option(help=f"{SANDBOX_HELP} (agent=planner)")] = "default",
    checkpoint: Annotated[str | None, typer.Option(help="A `polar train` run dir (agent=pure_rl).")] = None,
    train_steps: Annotated[int | None, typer.Option(help="Train PPO for this many env steps (agent=pure_rl).")] = None,
    algo: Annotated[str, typer.Option(help="A registered RL algorithm: ppo, sac, ... (agent=pure_rl).")] = "ppo",
    recipe: Annotated[str | None, typer.Option(help="Training recipe: skills/recipes/<name>.yaml or a path (agent=pure_rl).")] = None,
    episodes: Annotated[int, typer.Option(min=1)] = 10,
    seed: Annotated[int, typer.Option(min=0)] = 0,
    max_steps: Annotated[int | None, typer.Option(help="Per-episode step cap.")] = None,
    task: Annotated[str | None, typer.Option(help="Task in words (default: the harness's mission).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir (default: runs/evals/eval-<agent>[-<planner>]-<harness>).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help=FRESH_HELP)] = False,
) -> None:
    """Run one agent on one harness and report success with its interval and the cost ledger.

    Cells finished earlier in --out are reused while nothing they depend on changed (see
    `polar compare --help`)."""
    from polar.evals.comparison import compare
    from polar.evals.suite import load_suite

    spec: dict[str, Any] = {"name": agent, "kind": agent}
    if agent == "planner":
        if planner is None:
            raise ConfigError("--planner: agent=planner needs a planner profile (e.g. --planner symbolic)")
        spec |= {"planner": planner, "skills": skills, "sandbox": sandbox}
    elif agent == "pure_rl":
        spec |= {"algo": algo, "checkpoint": checkpoint, "train_steps": train_steps, "recipe": recipe}
    elif agent != "random":
        raise ConfigError(f"--agent: {agent!r} is not one of random, planner, pure_rl")
    h: dict[str, Any] = {"id": harness, "task": task, "max_steps": max_steps}
    suite = load_suite({"name": f"eval-{agent}", "agents": [spec], "harnesses": [h], "seeds": [seed],
                        "episodes": episodes})
    compare(suite, out or eval_out_dir(agent, planner, suite.harnesses[0]), fresh=fresh)


def eval_out_dir(agent: str, planner: str | None, harness: SuiteHarness) -> Path:
    """`runs/evals/eval-<agent>[-<planner>]-<harness>`: one folder per agent (and planner
    profile) and harness, so an eval on another harness or planner does not overwrite this one."""
    parts = [agent, *([Path(planner).stem] if planner else []), harness.label]
    if harness.id.endswith((".yaml", ".yml")):  # a spec path: its file name, not its folders
        parts[-1] = Path(harness.id).stem
    return Path("runs") / "evals" / re.sub(r"[^A-Za-z0-9_.\-]+", "_", "eval-" + "-".join(parts))


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
    app.command("eval")(eval_cmd)
