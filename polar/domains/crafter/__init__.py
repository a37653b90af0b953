"""Crafter: the harness adapter (`harness`), the agent's view read as cells and the planner's
text (`view`), and the benchmark's scores over episodes' achievements (`scores`)."""

from polar.domains.registry import Domain

DOMAIN = Domain(
    name="crafter",
    harness="polar.domains.crafter.harness:CrafterHarness",
    packages=("crafter",),
    check_id="polar.domains.crafter.harness:check_id",
    registered_ids="polar.domains.crafter.harness:registered_ids",
    id_help="crafter:",
    extra_listings=(("", "Crafter (Hafner 2021), 64x64 world, 10,000-step episodes"),),
    bare_id=True,
    episode_metrics="polar.domains.crafter.scores:episode_metrics",
)
