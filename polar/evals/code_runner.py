"""Play episodes with a model-written program: the restricted gate, then the sandbox.

    record = run_program(task, reply, seeds=[0, 1], profile=docker_profile())

Each program is first loaded by the `restricted` backend (RestrictedPython's policy, in its own
jailed worker): a program that does not parse, imports anything but the allowed modules, or
defines no `act` is refused there, before it reaches the sandbox that plays. It then runs in
`profile`'s sandbox (docker, network off, for committed results; process in unit tests), one
fresh load per episode so no state carries between episodes. A program that is refused,
raises, times out or answers outside the action space earns the task's lowest return for that
episode, and the record says why. Every env step it drove is counted, failed episodes too.
"""

from __future__ import annotations

import re
import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from polar.evals.code_tasks import CodeTask, CodeTaskHarness, make_task_harness
from polar.harnesses.base import Harness
from polar.sandboxes.base import Sandbox, SandboxError, SandboxLimits, SandboxOutputError
from polar.sandboxes.policy_runner import run_policy
from polar.sandboxes.profiles import SandboxProfile

ENTRYPOINT = "act"
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.DOTALL)


def extract_program(reply: str) -> str:
    """The code of a reply: the first fenced block when there is one, else the reply itself."""
    m = _FENCE.search(reply)
    return (m.group(1) if m else reply).strip() + "\n"


class EpisodeRun(BaseModel):
    """One episode a program played (or was refused before playing)."""

    model_config = ConfigDict(extra="forbid")

    seed: int
    ret: float  # the episode's return, or the task's lowest return when the program failed
    success: bool
    steps: int  # env steps driven (failed episodes included)
    error: str | None = None  # the error type: SandboxCodeError, SandboxTimeout, GateRefused, ...
    reason: str = ""
    wall_s: float = 0.0
    terminated: bool = False  # how the episode ended (both false: it did not end, or never started)
    truncated: bool = False


class ProgramRecord(BaseModel):
    """A program and the episodes it played: what an episode page shows."""

    model_config = ConfigDict(extra="forbid")

    task: str
    program: str
    gate: str  # "ok", or why the restricted gate refused it
    backend: str
    episodes: list[EpisodeRun]

    @property
    def env_steps(self) -> int:
        return sum(e.steps for e in self.episodes)

    @property
    def mean_return(self) -> float:
        return sum(e.ret for e in self.episodes) / max(len(self.episodes), 1)


def docker_profile(timeout_s: float = 1.0) -> SandboxProfile:
    """The sandbox committed results run in: docker, network off, default memory/CPU limits."""
    return SandboxProfile(backend="docker", limits=SandboxLimits(timeout_s=timeout_s))


GATE_LIMITS = SandboxLimits(timeout_s=2.0, load_timeout_s=10.0, cpu_s=5, memory_mb=128)


# The restricted backend's import allowlist (polar.sandboxes.worker.restricted_loader).
ALLOWED_IMPORTS = frozenset({"math", "itertools", "functools", "collections", "heapq", "random"})


def _imports(program: str) -> list[str]:
    """Every module the program imports, anywhere (the restricted backend checks an import in a
    function body only when it runs; the program runs in a plain-Python sandbox)."""
    import ast

    names: list[str] = []
    for node in ast.walk(ast.parse(program)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


def gate(program: str, limits: SandboxLimits = GATE_LIMITS) -> str | None:
    """None when the program passes the restricted gate, else why not: it must load in the
    `restricted` backend (RestrictedPython's policy, in its jailed worker), import nothing
    outside its allowlist (in function bodies too) and define `act`."""
    from polar.sandboxes.base import make_sandbox

    try:
        with make_sandbox("restricted", limits) as box:
            names = box.load(program)
    except SandboxError as err:
        return f"{type(err).__name__}: {err}"
    if ENTRYPOINT not in names:
        return f"SandboxOutputError: the code defines no function named {ENTRYPOINT!r}"
    refused = [n for n in _imports(program) if n not in ALLOWED_IMPORTS]  # it parsed: the load succeeded
    if refused:
        return (f"SandboxViolation: import of {refused[0]} is not allowed in the restricted sandbox "
                f"(allowed: {', '.join(sorted(ALLOWED_IMPORTS))})")
    return None


def run_program(task: CodeTask, reply: str, seeds: list[int], profile: SandboxProfile,
                *, sandbox: Sandbox | None = None, harness: Harness | None = None) -> ProgramRecord:
    """The program in `reply` played on one episode per seed (see the module docstring).
    `sandbox` reuses a started one (its container stays the caller's); else one is made and
    closed here. `harness`: the task's env made by the caller (a suite's cell, which keeps
    it open), else one is made and closed here."""
    program = extract_program(reply)
    refused = gate(program)
    if refused is not None:
        runs = [EpisodeRun(seed=s, ret=task.lowest_return, success=False, steps=0, error="GateRefused",
                           reason=f"refused by the restricted gate: {refused}") for s in seeds]
        return ProgramRecord(task=task.name, program=program, gate=refused, backend=profile.backend, episodes=runs)
    box = sandbox or profile.make()
    runs = []
    env = make_task_harness(task) if harness is None else CodeTaskHarness(task, inner=harness)
    try:
        for seed in seeds:
            runs.append(_episode(task, program, env, seed, box))
    finally:
        if harness is None:
            env.close()
        if sandbox is None:
            box.close()
    return ProgramRecord(task=task.name, program=program, gate="ok", backend=profile.backend, episodes=runs)


def _episode(task: CodeTask, program: str, harness: Any, seed: int, box: Sandbox) -> EpisodeRun:
    t0 = time.perf_counter()
    out = run_policy(program, harness, sandbox=box, entrypoint=ENTRYPOINT, max_steps=task.max_steps, seed=seed).outcome
    wall = time.perf_counter() - t0
    ended = {"terminated": out.terminated, "truncated": out.truncated}
    if out.error_type is not None:
        return EpisodeRun(seed=seed, ret=task.lowest_return, success=False, steps=out.steps, error=out.error_type,
                          reason=out.reason, wall_s=wall, **ended)
    if not (out.terminated or out.truncated):  # the step cap, not the env, ended it: cannot be judged
        err = SandboxOutputError(f"the episode did not end within {task.max_steps} steps")
        return EpisodeRun(seed=seed, ret=task.lowest_return, success=False, steps=out.steps,
                          error=type(err).__name__, reason=str(err), wall_s=wall, **ended)
    ret = float(out.reward)
    return EpisodeRun(seed=seed, ret=ret, success=bool(task.success(ret, out.terminated)), steps=out.steps,
                      reason=out.reason, wall_s=wall, **ended)
