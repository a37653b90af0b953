"""What the planner is shown: the task, the harness spec, the rendered observation, the
symbolic state, the recent outcomes and the skills retrieved for the task."""

from __future__ import annotations

import json
from typing import Any

from polar.agent.recording import RecordingHarness
from polar.errors import PolarError
from polar.harnesses.base import Harness
from polar.planners.base import HistoryItem, PlannerContext, SkillInfo
from polar.sandboxes.base import to_plain
from polar.skills.catalog import SkillCatalog
from polar.skills.model import Skill


def skill_info(skill: Skill, harness_id: str | None = None, affordance: float | None = None) -> SkillInfo:
    """The planner's view of a skill, with its best-supported measured success on this harness."""
    m = skill.success_for(harness_id)
    measured = m is not None and m.episodes > 0
    return SkillInfo(
        name=skill.name,
        version=skill.version,
        kind=skill.kind,
        description=skill.description,
        parameters={k: (p.choices if p.choices is not None else p.type) for k, p in skill.parameters.items()},
        optional=[k for k, p in skill.parameters.items() if not p.required],
        preconditions=skill.preconditions,
        effects=skill.effects,
        uses=skill.uses,
        success_rate=m.rate if measured else None,
        success_ci=(m.ci_low, m.ci_high) if measured else None,
        success_n=m.episodes if measured else None,
        affordance=affordance,
    )


class ContextBuilder:
    """Builds the PlannerContext of each decision of one episode; skills are retrieved once."""

    def __init__(self, task: str, harness: RecordingHarness, library: SkillCatalog | None, *, episode_id: str,
                 skills_shown: int, history_len: int) -> None:
        self.task, self.harness, self.episode_id = task, harness, episode_id
        self.history_len = history_len
        hid = harness.spec.id
        # the harness itself, not its id: a skill whose spaces do not fit it is not offered
        ranked = library.search(task, harness=harness, limit=skills_shown) if library is not None else []
        self.skills = [skill_info(s, hid) for s in ranked]

    def build(self, obs: Any, history: list[HistoryItem], feedback: str | None,
              previous_code: str | None = None, last_failed: bool = False) -> PlannerContext:
        h = self.harness
        return PlannerContext(
            task=self.task, spec=h.spec, observation=h.render_text(obs), symbolic=h.symbolic_state(),
            history=history[-self.history_len:], skills=self.skills, step=h.t, steps_left=h.steps_left,
            episode_id=self.episode_id, feedback=feedback, observation_json=observation_json(obs),
            previous_code=previous_code, last_failed=last_failed,
        )


OBSERVATION_JSON_CHARS = 2000


def observation_json(obs: Any, limit: int = OBSERVATION_JSON_CHARS) -> str:
    """The observation as policy code's `act(obs)` receives it (plain JSON data, see
    `polar.sandboxes.base.to_plain`; floats shown to 6 significant digits), as compact JSON
    cut at `limit` characters."""
    try:
        text = json.dumps(_short_floats(to_plain(obs)), separators=(",", ":"))
    except (PolarError, TypeError, ValueError) as err:  # not plain data: say so instead of guessing
        return f"(not JSON data: {type(err).__name__})"
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters in all)"


def _short_floats(v: Any) -> Any:
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, list):
        return [_short_floats(x) for x in v]
    if isinstance(v, dict):
        return {k: _short_floats(x) for k, x in v.items()}
    return v


def live_context(harness: Harness, seed: int, library: SkillCatalog | None, task: str | None = None,
                 skills_shown: int = 12) -> PlannerContext:
    """The context of the first decision of a live episode (reset with `seed`), as the agent
    loop builds it; the task defaults to the harness's mission, else its description."""
    h = RecordingHarness(harness, harness.spec.max_steps, record_steps=False)
    obs, _ = h.reset(seed=seed)
    if task is None:
        sym = h.symbolic_state()
        mission = obs.get("mission") if isinstance(obs, dict) else None
        task = (sym.mission if sym is not None and sym.mission else None) or \
            (mission if isinstance(mission, str) else None) or h.spec.description.strip().split("\n")[0]
    builder = ContextBuilder(task, h, library, episode_id="render", skills_shown=skills_shown, history_len=0)
    return builder.build(obs, [], None)
