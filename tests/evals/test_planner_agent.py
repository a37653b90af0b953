"""What the planner agent is charged: the skills' pretraining, and the data of a model Polar trained."""

from __future__ import annotations

import json
from pathlib import Path

from polar.evals.metrics import ledger
from polar.evals.planner_agent import model_charges

REPO = Path(__file__).resolve().parents[2]


def test_the_trained_planner_is_charged_the_env_steps_of_its_training_data() -> None:
    # The figure in model.json must be the training loop's own record: the teacher's episodes
    # and the sampled episodes of its round (its held-out evaluations are not training data).
    record = json.loads((REPO / "evals/results/planner-training/loop-2026-12-02/results.json").read_text())["ledger"]
    expected = record["teacher"]["env_steps"] + sum(r["sample"]["env_steps"] for r in record["improve"])
    assert model_charges("polar-planner") == {"model:polar-planner@1": expected}
    assert ledger(model_charges("polar-planner")).task_train_env_steps == expected


def test_a_model_polar_did_not_train_is_charged_nothing() -> None:
    assert model_charges("smollm2-135m") == {}
