"""MiniGrid: the harness adapter (`harness`), its observations (`obs`), missions, predicates and
state (`state`), the observation-memory reader (`memory_reader`), and its skills: `goto`
(features, hooks, training env, measurement), the one-action primitives and the memory skills."""
