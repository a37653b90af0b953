"""Every training target is a reply the served grammar can give, in its exact key order (issue 41).

llama.cpp's JSON-schema grammar writes an object's required properties first, then the optional
ones. Targets written in another order (`{"color": "yellow", "object": "key"}` with `object`
required) are replies the served model cannot give: it learned to close the object after
`"object"`, and the served models never named a colour. The check here is llama.cpp's own
grammar (the GBNF llama-cpp-python's server makes from the schema, run by llama.cpp's grammar
sampler over SmolLM2's real vocabulary), fed each target token by token."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Any

import pytest

from polar.agent import Agent, AgentSettings
from polar.evals.runner import default_task
from polar.evals.suite import SuiteHarness
from polar.harnesses.base import HarnessSpec
from polar.harnesses.registry import make_harness
from polar.llm.dataset import read_split
from polar.planners.base import PlannerContext, SkillInfo
from polar.planners.dataset import build_dataset, iter_episodes
from polar.planners.llm import LLMPlanner
from polar.planners.profile import load_planner, load_planner_profile
from polar.planners.schema import decision_schema, emitted_order
from polar.skills.search_path import open_library
from polar.skills.store import SkillLibrary
from polar.workspace import shipped_roots
from tests.llm.engine import require_engine, require_model

REPO = Path(__file__).resolve().parents[2]
TASKS = ["minigrid:MiniGrid-DoorKey-8x8-v0", "minigrid:MiniGrid-UnlockPickup-v0",  # the planner-training
         "minigrid:MiniGrid-BlockedUnlockPickup-v0"]                                  # tasks (TRAIN)
MEMORY_GOTO = {"type": "object", "additionalProperties": False, "required": ["object"],
               "properties": {"color": {"enum": ["red", "yellow"]}, "object": {"enum": ["key", "door"]}}}


class ServedGrammar:
    """llama.cpp's grammar sampler for a JSON schema, as llama-cpp-python's server builds it
    (`LlamaGrammar.from_json_schema`: `json_schema_to_gbnf`), over a real model's vocabulary."""

    def __init__(self) -> None:
        import llama_cpp

        from polar.llm.models import builtin_entry

        self.llama_cpp = llama_cpp
        self.llm = llama_cpp.Llama(model_path=builtin_entry("smollm2-135m").path, vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)

    def _allowed(self, sampler: Any, token: int) -> bool:
        lc = self.llama_cpp
        data = (lc.llama_token_data * 1)(lc.llama_token_data(token, 0.0, 0.0))
        lc.llama_sampler_apply(sampler, ctypes.byref(lc.llama_token_data_array(data, 1, -1, False)))
        return data[0].logit != float("-inf")

    def accepts(self, text: str, schema: dict[str, Any]) -> bool:
        """Whether a reply constrained by `schema` can be exactly `text` and then end."""
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        lc = self.llama_cpp
        sampler = lc.llama_sampler_init_grammar(self.vocab, json_schema_to_gbnf(json.dumps(schema)).encode(), b"root")
        try:
            for token in self.llm.tokenize(text.encode(), add_bos=False, special=False):
                if not self._allowed(sampler, token):
                    return False
                lc.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, lc.llama_vocab_eos(self.vocab))  # complete: it may end here
        finally:
            lc.llama_sampler_free(sampler)


@pytest.fixture(scope="module")
def grammar() -> ServedGrammar:
    require_engine()
    require_model("smollm2-135m")
    return ServedGrammar()


def test_the_served_grammar_writes_required_properties_first(grammar):
    assert grammar.accepts('{"object": "key", "color": "red"}', MEMORY_GOTO)
    assert grammar.accepts('{"object": "key"}', MEMORY_GOTO)
    assert not grammar.accepts('{"color": "red", "object": "key"}', MEMORY_GOTO)  # the old targets' order
    assert not grammar.accepts('{"object": "key", "color": "red"', MEMORY_GOTO)  # not complete
    assert emitted_order({"color": "red", "object": "key"}, MEMORY_GOTO) == {"object": "key", "color": "red"}


def test_coordinates_take_the_order_of_the_alternative_that_holds_them(grammar):
    goto = SkillInfo(name="goto", description="", parameters={"color": ["red"], "object": ["key"], "x": "int",
                                                              "y": "int"},
                     optional=["color", "x", "y"], effects=["facing({object},{color},{x},{y})"])
    schema = decision_schema([goto], "skill")
    call = {"decision": {"kind": "skill", "skill": "goto", "args": {"color": "red", "object": "key", "x": 3, "y": 4}}}
    ordered = emitted_order(call, schema)
    assert list(ordered["decision"]["args"]) == ["object", "x", "y", "color"]
    assert grammar.accepts(json.dumps(ordered), schema)
    assert not grammar.accepts(json.dumps(call), schema)


def _teacher_episodes(mode: str, out: Path) -> Path:
    """One episode of the planner-training teacher per training task, with recorded contexts:
    the symbolic planner over skills/ (predicates) or symbolic-memory over skills_memory/ on
    harnesses with odometry (memory), as evals/planner_teacher*.yaml run them."""
    memory = mode == "memory"
    planner = load_planner("symbolic-memory" if memory else "symbolic")
    library = (open_library(next(r / "skills_memory" for r in shipped_roots() if (r / "skills_memory").is_dir()))
               if memory else SkillLibrary(REPO / "skills"))
    for i, harness in enumerate(TASKS):
        with make_harness(harness, **({"odometry": True} if memory else {})) as h:
            task = default_task(h, i, SuiteHarness(id=harness))  # the mission, as a suite sends it
            rec = Agent(planner, library, AgentSettings(max_decisions=30, record_context=True)).run(task, h, seed=i)
        assert rec.success, f"{mode} teacher failed {harness}"
        rec.save(out / f"{i}.json")
    return out


def _student(profile: str) -> LLMPlanner:
    """The student planner, unserved (as the dataset's renderer loads it): its `response_format`
    is the schema the served model is constrained by."""
    return LLMPlanner(load_planner_profile(profile, {"cache_dir": None, "record_path": None, "server": None}))


@pytest.mark.parametrize("mode", ["predicates", "memory"])
def test_every_teacher_target_is_a_reply_the_served_grammar_accepts(grammar, tmp_path, mode):
    episodes = _teacher_episodes(mode, tmp_path / "teacher")
    student = "student-memory" if mode == "memory" else "student"
    build_dataset([episodes], tmp_path / "d", student=student, val_fraction=0.0)
    examples = read_split(tmp_path / "d")
    planner = _student(student)
    contexts = {(rec.episode_id, d.index): (rec, d) for rec in iter_episodes([episodes]) for d in rec.decisions}
    coloured = refused_before = 0
    for ex in examples:
        rec, d = contexts[(ex.episode_id, ex.decision_index)]
        ctx = PlannerContext.model_validate(
            {**d.context, "spec": HarnessSpec.model_validate(rec.extra["harness_spec"])})  # type: ignore[dict-item]
        schema = planner.response_format(ctx)["schema"]
        assert grammar.accepts(ex.completion, schema), (mode, ex.completion)
        target = json.loads(ex.completion)
        args = target["decision"].get("args", {})
        if {"color", "object"} <= set(args):
            coloured += 1
            skill = next(s for s in ctx.skills if s.name == target["decision"]["skill"])
            # the order the targets had before the fix (the declared parameters': colour first) is
            # refused wherever the object is required
            target["decision"]["args"] = {k: args[k] for k in skill.parameters if k in args}
            if "object" not in skill.optional:
                assert not grammar.accepts(json.dumps(target), schema), target
                refused_before += 1
    assert len(examples) >= 15 and coloured >= 3 and refused_before >= 3, (len(examples), coloured, refused_before)
