"""Comparisons between two agents of a suite: paired on the same episode seeds, and over runs.

Every agent of a suite plays episode i of seed s from the same env seed, so two agents' episodes
pair up on the env seed. Per harness, the paired comparison gives the exact McNemar test on the
discordant pairs and a seed-level interval of the success difference; across harnesses, the
probability of improvement P(A > B) compares their per-seed success rates (rliable). A pair of
agents that read different information is flagged: a difference between them is not a
difference of method alone.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from polar.evals.cells import CellResult
from polar.statistics import Estimate, mcnemar_exact, probability_of_improvement, seed_estimate


class PairedHarness(BaseModel):
    model_config = ConfigDict(extra="forbid")

    harness: str
    pairs: int  # episodes of A and B started from the same env seed (success known for both)
    a_success: float
    b_success: float
    a_only: int  # pairs only A solved
    b_only: int  # pairs only B solved
    p_value: float  # exact McNemar, two-sided
    difference: Estimate  # success(A) - success(B) over the pairs; interval over seeds x pairs


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a: str
    b: str
    a_observes: str
    b_observes: str
    same_information: bool
    note: str  # what a reader must know before reading the numbers as "A beats B"
    tasks: list[str]  # harnesses both agents ran on
    probability_of_improvement: Estimate | None  # P(A > B) over per-seed success rates
    paired: list[PairedHarness]


def _outcomes(cells: list[CellResult]) -> dict[int, tuple[int, bool]]:
    """env seed -> (cell seed, success) for the episodes whose success is known."""
    return {e.seed: (r.cell.seed, bool(e.success)) for r in cells for e in r.episodes
            if e.success is not None and e.seed is not None}


def paired_harness(harness: str, a: list[CellResult], b: list[CellResult], n_boot: int) -> PairedHarness | None:
    oa, ob = _outcomes(a), _outcomes(b)
    common = sorted(set(oa) & set(ob))
    if not common:
        return None
    sa = [oa[k][1] for k in common]
    sb = [ob[k][1] for k in common]
    a_only, b_only, p = mcnemar_exact(sa, sb)
    by_seed: dict[int, list[float]] = {}
    for k, x, y in zip(common, sa, sb, strict=True):
        by_seed.setdefault(oa[k][0], []).append(float(x) - float(y))
    return PairedHarness(
        harness=harness, pairs=len(common), a_success=sum(sa) / len(common), b_success=sum(sb) / len(common),
        a_only=a_only, b_only=b_only, p_value=p,
        difference=seed_estimate(list(by_seed.values()), n_boot=n_boot, seed=0),
    )


def information_note(a: str, a_observes: str, b: str, b_observes: str) -> str:
    if a_observes == b_observes:
        return ""
    return (f"different information: {a} reads {a_observes}, {b} reads {b_observes}; "
            "the gap mixes method and information")


def compare_agents(
    a: str, b: str, info: dict[str, str], harnesses: list[str],
    cells: dict[tuple[str, str], list[CellResult]], seed_scores: dict[tuple[str, str], dict[int, float]],
    n_boot: int,
) -> Comparison:
    """A vs B on the harnesses both ran (`cells` and `seed_scores` keyed by (agent, harness))."""
    tasks = [h for h in harnesses if seed_scores.get((a, h)) and seed_scores.get((b, h))]
    poi = (probability_of_improvement([list(seed_scores[(a, h)].values()) for h in tasks],
                                      [list(seed_scores[(b, h)].values()) for h in tasks], n_boot=n_boot)
           if tasks else None)
    paired = [p for h in harnesses if (a, h) in cells and (b, h) in cells
              if (p := paired_harness(h, cells[(a, h)], cells[(b, h)], n_boot)) is not None]
    return Comparison(a=a, b=b, a_observes=info[a], b_observes=info[b], same_information=info[a] == info[b],
                      note=information_note(a, info[a], b, info[b]), tasks=tasks,
                      probability_of_improvement=poi, paired=paired)
