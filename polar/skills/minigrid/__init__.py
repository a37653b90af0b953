"""Compatibility paths for MiniGrid's skills, which live in `polar.domains.minigrid`.

Committed skill manifests name their hooks by module path (`polar.skills.minigrid.goto:hook_features`,
`polar.skills.minigrid.memory:act`); the manifest is part of what a skill is, so these paths stay
and each module here is the domain module itself (`sys.modules` points the old name at it).
"""
