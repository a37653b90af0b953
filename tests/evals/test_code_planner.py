"""The shipped code model, `code-planner`: resolves by name from the committed folder, is the RL
run's chain (SFT adapter, then the RL adapter), is charged its training's env steps, and, merged
and served by llama.cpp, writes a program the restricted gate accepts and the sandbox plays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polar.evals.code_runner import run_program
from polar.evals.code_tasks import TASKS, task_messages
from polar.evals.planner_agent import model_charges
from polar.llm.models import read_shipped, resolve_model
from polar.sandboxes.profiles import SandboxProfile
from tests.llm.engine import free_port, require_engine, require_model

# what the RL run charged (evals/results/code/rl3-seed0/results.json, row 14): every episode of
# every program sampled in iterations 1-14
IT14_ENV_STEPS = 72_048
ROOT = Path(__file__).resolve().parents[2]


def test_code_planner_resolves_to_the_sft_then_rl_adapter_chain_and_is_charged_its_training() -> None:
    entry = resolve_model("code-planner")
    assert entry.source.startswith("shipped:") and entry.engine == "llamacpp"
    folder = Path(entry.source.removeprefix("shipped:"))
    model = read_shipped(folder)  # checksums, safetensors only
    assert model.base == "smollm2-135m" and model.adapters == ["adapter-1", "adapter-2"]
    sft, rl = model.provenance["chain"]
    assert sft["method"] == "lora" and sft["dataset_sha256"] == "971a4be65cb84b94"  # code-sft@3's data
    assert rl["method"] == "grpo" and rl["trained_from"] == "code-sft@3" and rl["iteration"] == 14
    assert model.provenance["env_steps"] == rl["env_steps_total"] == IT14_ENV_STEPS
    assert sum(rl["env_steps_by_task"].values()) == IT14_ENV_STEPS and set(rl["env_steps_by_task"]) == set(TASKS)
    results = json.loads((ROOT / "evals/results/code/rl3-seed0/results.json").read_text())
    assert results["rows"][13]["env_steps_total"] == IT14_ENV_STEPS
    # the RL adapter is the top-10-layer LoRA the run trained on code-sft@3 merged
    cfg = json.loads((folder / "adapter-2" / "adapter_config.json").read_text())
    assert cfg["layers_to_transform"] == list(range(20, 30))
    assert model_charges("code-planner") == {f"model:code-planner@{entry.version}": IT14_ENV_STEPS}


@pytest.mark.slow
def test_code_planner_is_merged_served_and_writes_a_cartpole_program_the_gate_accepts(tmp_path) -> None:
    """A fresh use: merged into SmolLM2 (once: the cache keeps its GGUF), served by llama.cpp,
    asked greedily for a CartPole controller; the program passes the gate and plays a held-out
    episode in the process sandbox without an error."""
    from polar.evals.code_eval import code_llm
    from polar.llm.adapters import materialise
    from polar.llm.serve import ensure_server, stop_own

    require_engine()
    require_model("smollm2-135m")
    gguf = materialise(resolve_model("code-planner"))
    assert gguf.is_file() and gguf.name.startswith("code-planner-")
    client = code_llm("code-planner", port=free_port(), temperature=0.0, record=tmp_path / "calls.jsonl")
    server = client.settings.server
    assert server is not None
    try:
        ensure_server(server, lambda m: None)
        reply = client.complete(task_messages(TASKS["cartpole"]), template="code_task", replay=False).content
    finally:
        stop_own(server.host, server.port)
    rec = run_program(TASKS["cartpole"], reply, [1000], SandboxProfile(backend="process"))
    assert rec.gate == "ok", (rec.gate, reply)
    assert rec.program.startswith("def act(obs):\n    x, x_dot, angle, angle_dot = obs"), rec.program
    run = rec.episodes[0]
    assert run.error is None and run.steps > 0, run


def test_shipping_refuses_an_unfinished_or_unchanged_iteration_and_a_folder_that_is_no_adapter(tmp_path) -> None:
    from polar.errors import ConfigError
    from polar.evals.code_ship import rl_provenance
    from polar.llm.adapters import ship

    run = tmp_path / "rl-run"
    run.mkdir()
    (run / "state.json").write_text(json.dumps({"config": {"model": "code-sft@3"}, "iterations": {
        "1": {"sample": {}, "update": {"steps": 0}, "convert": {}, "log": {"row": {"env_steps_total": 10, "programs": 2}}},
        "2": {"sample": {}}}}))
    with pytest.raises(ConfigError, match=r"iteration 2 has not finished \(finished: \[1\]\)"):
        rl_provenance(run, 2)
    with pytest.raises(ConfigError, match="iteration 1 made no update"):
        rl_provenance(run, 1)
    (tmp_path / "not-an-adapter").mkdir()
    with pytest.raises(ConfigError, match="not a LoRA adapter folder .missing adapter_config.json"):
        ship("any-registered-model", tmp_path / "out", on_top=[(tmp_path / "not-an-adapter", {})])
