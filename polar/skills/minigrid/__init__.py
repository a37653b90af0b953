"""MiniGrid skills: the trained `goto` policy (features, hooks, training env, measurement) and
the one-action primitives (`pickup`, `drop`, `toggle`, `left`, `right`).

Nothing here is imported by `polar.skills` itself: a harness-specific skill is found through
the hook paths in its manifest (`polar.skills.minigrid.goto:hook_features`), and it reads
privileged simulator state through a capability the harness declares (`"grid"`).
"""
