"""What the planner is shown of a skill: built by the agent layer from the manifest."""

from polar.agent.context import skill_info
from polar.skills.model import Measurement
from polar.skills.store import SkillLibrary
from tests.skills.conftest import manifest, tiny_policy


def test_skill_info_shows_the_measured_success_on_this_harness(tmp_path) -> None:
    library = SkillLibrary(tmp_path / "skills")
    skill = library.register_policy(tiny_policy(), **manifest())
    library.record_evaluation(skill, Measurement.from_counts(9, 10, harness="minigrid:A"))
    library.record_evaluation(skill, Measurement.from_counts(1, 4, harness="minigrid:B"))
    info = skill_info(library.get("reach"), "minigrid:A")
    assert info.success_rate == 0.9 and info.success_ci[0] < 0.9 < info.success_ci[1]
    assert info.parameters == {"color": ["red", "green"]} and info.kind == "policy"
    assert skill_info(library.get("reach"), "minigrid:B").success_rate == 0.25
