"""What the planner is shown: the task, the harness spec, the rendered observation, the
symbolic state, the recent outcomes and the skills retrieved for the task."""

from __future__ import annotations

from typing import Any

from polar.agent.recording import RecordingHarness
from polar.planners.base import HistoryItem, PlannerContext, SkillInfo
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
        preconditions=skill.preconditions,
        effects=skill.effects,
        success_rate=m.rate if measured else None,
        success_ci=(m.ci_low, m.ci_high) if measured else None,
        success_n=m.episodes if measured else None,
        affordance=affordance,
    )


class ContextBuilder:
    """Builds the PlannerContext of each decision of one episode; skills are retrieved once."""

    def __init__(self, task: str, harness: RecordingHarness, library: Any, *, episode_id: str,
                 skills_shown: int, history_len: int) -> None:
        self.task, self.harness, self.episode_id = task, harness, episode_id
        self.history_len = history_len
        hid = harness.spec.id
        ranked = library.search(task, harness=hid, limit=skills_shown) if library is not None else []
        self.skills = [skill_info(s, hid) for s in ranked]

    def build(self, obs: Any, history: list[HistoryItem], feedback: str | None) -> PlannerContext:
        h = self.harness
        return PlannerContext(
            task=self.task, spec=h.spec, observation=h.render_text(obs), symbolic=h.symbolic_state(),
            history=history[-self.history_len:], skills=self.skills, step=h.t, steps_left=h.steps_left,
            episode_id=self.episode_id, feedback=feedback,
        )
