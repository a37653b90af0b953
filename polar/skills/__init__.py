"""The skill library: trained policies and primitives that planners find and call.

    from polar.skills import SkillLibrary, run_skill
    lib = open_library()                      # ./skills over the shipped library (search_path)
    skill = lib.get("goto")                   # or "goto@2"
    outcome, obs = run_skill(skill, harness, {"object": "key"}, obs=obs)
"""

from polar.skills.catalog import SkillCatalog
from polar.skills.model import (
    Measurement,
    Skill,
    SkillArgumentError,
    SkillError,
    SkillLoadError,
    SkillNotFound,
)
from polar.skills.runner import SkillResult, run_skill
from polar.skills.search_path import LayeredLibrary, open_library
from polar.skills.store import SkillLibrary, load_skill_policy

__all__ = [
    "LayeredLibrary", "Measurement", "Skill", "SkillArgumentError", "SkillCatalog", "SkillError", "SkillLibrary", "SkillLoadError",
    "SkillNotFound", "SkillResult", "load_skill_policy", "open_library", "run_skill",
]
