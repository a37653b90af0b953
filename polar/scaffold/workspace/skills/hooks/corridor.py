"""The workspace's own skill hooks: `hooks.corridor:<function>` in a skill manifest means a
function of this file. Polar imports nothing else from a workspace: a manifest naming any other
module is refused when the skill is registered (docs/skills.md).

- `walk` is a plain-Python skill's policy: `act(obs, args, **config) -> action`, one call per
  step (skills/walk_scripted.skill.yaml registers it: `polar skills add ...`).
- `on_button` is a termination check: `check(state, args, obs, info) -> bool`.
"""


def walk(obs, args, left=0, right=1):
    """Step towards the button: obs is [your position, the button's position]."""
    agent, button = int(obs[0]), int(obs[1])
    return left if button < agent else right


def on_button(state, args, obs, info):
    return int(obs[0]) == int(obs[1])
