"""`polar llm dataset`: a teacher's recorded contexts rendered with the student's templates are
exactly what the student is sent; the model's own episodes keep their token ids; only what the
harness rewarded enters; a success only the planner claims never does."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from polar.agent import Agent, AgentSettings
from polar.commands.app import app
from polar.harnesses.registry import make_harness
from polar.llm.dataset import read_info, read_split
from polar.planners.dataset import build_dataset
from polar.planners.profile import load_planner
from polar.skills.store import SkillLibrary
from tests.llm_server import Reply, ScriptedLLMServer, write_profile

REPO = Path(__file__).resolve().parents[2]
HARNESS = "minigrid:MiniGrid-DoorKey-5x5-v0"
TASK = "use the key to open the door and then get to the goal"
STUDENT = {"templates": {"system": "compact_system", "user": "compact_skill"}, "observation": "predicates",
           "max_tokens": 64, "budgets": {"max_calls": 20}}


def run(planner, seed: int, out: Path, harness: str = HARNESS, task: str = TASK, library=None, **cfg) -> Path:
    lib = library if library is not None else SkillLibrary(REPO / "skills")
    with make_harness(harness) as h:
        rec = Agent(planner, lib, AgentSettings(max_decisions=12, **cfg)).run(task, h, seed=seed)
    rec.save(out)
    return out


def test_teacher_rendering_is_what_the_student_sees_and_own_episodes_keep_token_ids(tmp_path):
    teacher = run(load_planner("symbolic"), 0, tmp_path / "teacher" / "episode.json", record_context=True)
    assert json.loads(teacher.read_text())["success"] is True
    with ScriptedLLMServer() as server:
        profile = write_profile(tmp_path, server, **STUDENT)
        info = build_dataset([teacher.parent], tmp_path / "d1", student=str(profile), val_fraction=0.0)
        examples = read_split(tmp_path / "d1")
        assert info.counts == {"train": len(examples), "validation": 0} and len(examples) >= 4
        assert {ex.source for ex in examples} == {"teacher:planner:symbolic"}
        assert all(ex.template == "compact_system+compact_skill" for ex in examples)
        assert all(json.loads(ex.completion)["decision"].get("reason") is None for ex in examples)

        # the student answering with the targets is sent exactly the dataset's prompts
        ids = [[100 + i, 200 + i] for i in range(len(examples))]
        server.push(*[Reply.text(ex.completion, token_ids=t) for ex, t in zip(examples, ids, strict=True)])
        own = run(load_planner(profile), 0, tmp_path / "own" / "ok.json")
        assert json.loads(own.read_text())["success"] is True
        assert [r.messages for r in server.requests] == [ex.messages for ex in examples]

        # a failing episode of the same model: goto a ball that is not there, then give up
        # (its ids are kept only when the reply is exactly the canonical target, args included)
        server.push(Reply.decision({"kind": "skill", "skill": "left", "args": {}}, token_ids=[1]),
                    Reply.decision({"kind": "skill", "skill": "goto", "args": {"object": "ball", "color": "red"}}),
                    Reply.decision({"kind": "finish", "success": False}))
        failed = run(load_planner(profile), 1, tmp_path / "own" / "failed.json")
        assert json.loads(failed.read_text())["success"] is False

    calls = [tmp_path / "calls.jsonl"]
    info = build_dataset([tmp_path / "own"], tmp_path / "d2", calls=calls, val_fraction=0.0)
    own_examples = read_split(tmp_path / "d2")
    assert [ex.messages for ex in own_examples] == [ex.messages for ex in examples]
    assert [ex.completion_token_ids for ex in own_examples] == ids  # the model's own ids, not re-tokenised
    assert {ex.source for ex in own_examples} == {"self:openai/scripted"}
    assert info.skipped == {"episode-not-successful": 3}

    # keep=outcome: the failed episode's successful `left` enters, its failed goto and give-up do not
    info = build_dataset([tmp_path / "own"], tmp_path / "d3", calls=calls, keep="outcome", val_fraction=0.0)
    assert info.counts["train"] == len(examples) + 1 and info.with_token_ids == len(examples) + 1
    assert info.skipped == {"outcome-not-successful": 2}


def test_a_success_only_the_planner_claims_never_enters_a_dataset(tmp_path):
    with ScriptedLLMServer(default=Reply.decision({"kind": "finish", "success": True})) as server:
        profile = write_profile(tmp_path, server)
        path = run(load_planner(profile), 0, tmp_path / "eps" / "claim.json", harness="gym:Pendulum-v1",
                   task="swing the pendulum up", library=SkillLibrary(tmp_path / "no-skills"))
    rec = json.loads(path.read_text())
    # nothing on Pendulum can tell success: the claim is recorded as a claim, success unknown
    assert rec["success"] is None and rec["extra"]["success_source"] == "planner-claim"
    for keep in ("episode", "outcome", "both"):
        info = build_dataset([tmp_path / "eps"], tmp_path / keep, calls=[tmp_path / "calls.jsonl"], keep=keep)
        assert info.counts == {"train": 0, "validation": 0}
        assert info.skipped["success-not-confirmed-by-harness"] == 1


def test_cli_splits_by_seed_and_reports_stats(tmp_path):
    for seed in range(4):
        run(load_planner("symbolic"), seed, tmp_path / "eps" / f"s{seed}.json", record_context=True)
    with ScriptedLLMServer() as server:
        profile = write_profile(tmp_path, server, **STUDENT)
        out = CliRunner().invoke(app, ["llm", "dataset", str(tmp_path / "eps"), "--student", str(profile),
                                       "--out", str(tmp_path / "d"), "--val-fraction", "0.5"])
    assert out.exit_code == 0, out.output
    info = read_info(tmp_path / "d")
    assert "per skill: goto" in out.output and f"sha256 {info.sha256}" in out.output
    train, val = set(info.seeds["train"]), set(info.seeds["validation"])
    assert train and val and not train & val and train | val == {0, 1, 2, 3}
    assert sum(info.per_skill.values()) == sum(info.counts.values())


def test_the_same_teacher_episodes_always_give_the_same_dataset(tmp_path):
    """Each episode's phrasing (mission or paraphrase) follows from its env seed and task, not
    from its random episode id: re-running the teacher renders the same dataset."""
    from polar.planners.dataset import read_paraphrases

    first = run(load_planner("symbolic"), 0, tmp_path / "t0" / "episode.json", record_context=True)
    record = json.loads(first.read_text())
    phrasings = tmp_path / "paraphrases.yaml"
    phrasings.write_text(json.dumps({TASK: [f"phrasing number {i}" for i in range(20)]}))
    datasets = []
    for i, episode_id in enumerate(["a" * 32, "b" * 32, "c" * 32]):  # the teacher run again, other ids
        copy = tmp_path / f"t{i + 1}" / "episode.json"
        copy.parent.mkdir()
        copy.write_text(json.dumps({**record, "episode_id": episode_id}))
        build_dataset([copy.parent], tmp_path / f"d{i}", student="student", val_fraction=0.0,
                      paraphrases=read_paraphrases(phrasings))
        datasets.append([ex.messages for ex in read_split(tmp_path / f"d{i}")])
    assert datasets[0] and datasets[0] == datasets[1] == datasets[2]


def test_episodes_of_one_task_are_rendered_with_every_phrasing_the_mission_included():
    """The phrasing follows each episode's own key. A regression: the loop over the paraphrase
    templates reused the key's name, so every episode hashed the last template and one task
    trained on a single phrasing, never its mission (issue 41's loops: the student met the
    mission first at evaluation)."""
    from polar.planners.dataset import Renderer, read_paraphrases

    paraphrases = read_paraphrases(REPO / "evals" / "planner-training" / "paraphrases.yaml")
    renderer = Renderer(lambda ctx: [], "t", "h", paraphrases)
    for mission, n_phrasings in (("pick up the blue box", 8), (TASK, 5)):
        chosen = {renderer.task_for(mission, f"{seed}|{mission}") for seed in range(200)}
        assert mission in chosen
        assert len(chosen) == n_phrasings, chosen
    assert renderer.task_for("pick up the red box", "7|x") == renderer.task_for("pick up the red box", "7|x")
