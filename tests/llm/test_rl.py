"""GRPO's objective on a tiny randomly initialised Llama (built here, no hub): group-relative
advantages, the clipped ratio, the k3 KL (zero at the reference), the gradient's sign; and
token faithfulness: the trainer's tokenizer against the server's, on a real llama.cpp server."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from polar.llm.rl import (
    GRPOConfig,
    GRPOTrainer,
    Rollout,
    TokenizationMismatch,
    check_tokenizer,
    group_advantages,
    grpo_token_loss,
    imitation_token_loss,
    rollout_from_call,
    sequence_logprobs,
)
from tests.llm.engine import free_port, require_engine, require_model


def test_group_advantages_are_centred_scaled_and_zero_std_groups_dropped() -> None:
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == [1.0, -1.0, -1.0, 1.0]
    a = group_advantages([3.0, 1.0, 2.0])
    assert a is not None and abs(sum(a)) < 1e-9 and abs(sum(x * x for x in a) / 3 - 1) < 1e-9
    assert a[0] > a[2] > a[1]
    assert group_advantages([1.0, 1.0, 1.0, 1.0]) is None  # all solved: nothing to compare
    assert group_advantages([0.0, 0.0]) is None
    assert group_advantages([1.0]) is None


def test_the_ratio_is_clipped_where_it_would_overshoot() -> None:
    import torch

    eps = 0.2
    # ratio e^0.5 = 1.65 > 1 + eps with a positive advantage: the clipped term wins, no gradient
    logp = torch.zeros(3, requires_grad=True)
    old = torch.full((3,), -0.5)
    loss, s = grpo_token_loss(logp, old, logp.detach(), 1.0, eps, 0.0)
    loss.backward()
    assert math.isclose(float(loss.detach()), -(1 + eps), rel_tol=1e-6) and s["clip_frac"] == 1.0
    assert float(logp.grad.abs().sum()) == 0.0
    # the same ratio with a negative advantage is not clipped (the pessimistic min keeps r * A)
    logp = torch.zeros(3, requires_grad=True)
    loss, s = grpo_token_loss(logp, old, logp.detach(), -1.0, eps, 0.0)
    loss.backward()
    assert math.isclose(float(loss.detach()), math.exp(0.5), rel_tol=1e-6)
    assert torch.allclose(logp.grad, torch.full((3,), math.exp(0.5) / 3))
    # inside the clip range: the plain ratio, gradient -A * r / n per token
    logp = torch.zeros(2, requires_grad=True)
    loss, s = grpo_token_loss(logp, torch.full((2,), -0.1), logp.detach(), 2.0, eps, 0.0)
    loss.backward()
    assert s["clip_frac"] == 0.0 and torch.allclose(logp.grad, torch.full((2,), -2.0 * math.exp(0.1) / 2))


def test_k3_kl_is_zero_at_the_reference_and_positive_away_from_it() -> None:
    import torch

    logp = torch.tensor([-1.0, -2.0, -0.5])
    _, s = grpo_token_loss(logp, logp, logp, 0.0, 0.2, 1.0)
    assert s["kl"] == 0.0
    _, s = grpo_token_loss(logp, logp, logp + torch.tensor([0.3, -0.3, 0.1]), 0.0, 0.2, 1.0)
    d = torch.tensor([0.3, -0.3, 0.1])
    assert math.isclose(s["kl"], float((torch.exp(d) - d - 1).mean()), rel_tol=1e-6) and s["kl"] > 0


def test_self_imitation_weights_the_log_likelihood_by_the_positive_advantage_alone() -> None:
    import torch

    logp = torch.tensor([-7.0, -0.5], requires_grad=True)
    loss, s = imitation_token_loss(logp, logp.detach(), 2.0, 0.04)
    loss.backward()
    assert s["kl"] == 0.0 and torch.allclose(logp.grad, torch.full((2,), -1.0))  # -A / n: no ratio, no clip
    logp = torch.tensor([-7.0, -0.5], requires_grad=True)
    loss, _ = imitation_token_loss(logp, logp.detach() - 0.3, -1.0, 0.04)  # worse than the group: only the KL
    loss.backward()
    assert float(loss.detach()) > 0 and bool((logp.grad > 0).all())  # pulled back towards the reference


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    """A 2-layer Llama with random weights and a 64-token vocabulary (no tokenizer needed:
    the trainer scores token ids)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    out = tmp_path_factory.mktemp("tiny-llama") / "ckpt"
    LlamaForCausalLM(cfg).save_pretrained(out)
    return out


def _on_policy(trainer: GRPOTrainer, prompt: list[int], completion: list[int], advantage: float) -> Rollout:
    import torch

    with torch.no_grad():
        lp = sequence_logprobs(trainer.model, prompt, completion)
    return Rollout(prompt_ids=prompt, completion_ids=completion, sampler_logprobs=lp.tolist(), advantage=advantage)


def test_a_step_raises_the_positive_sequence_and_lowers_the_negative_one(tiny_llama: Path, tmp_path: Path) -> None:
    import torch

    cfg = GRPOConfig(learning_rate=5e-3, kl_coef=0.04, minibatch=2, lora_layers=1, lora_r=4, lora_alpha=8, threads=1)
    trainer = GRPOTrainer(tiny_llama, cfg)
    up = _on_policy(trainer, [1, 2, 3, 4], [10, 11, 12], +1.0)
    down = _on_policy(trainer, [1, 2, 3, 5], [20, 21], -1.0)
    # the fresh adapter is zero: policy = reference, so the KL term starts at exactly 0
    ref = trainer.reference_logprobs([up, down])
    assert torch.equal(ref[0], torch.tensor(up.sampler_logprobs))
    stats = trainer.update([up, down])
    assert stats["steps"] == 1 and stats["kl"] == 0.0 and stats["clip_frac"] == 0.0
    with torch.no_grad():
        after_up = float(sequence_logprobs(trainer.model, up.prompt_ids, up.completion_ids).sum())
        after_down = float(sequence_logprobs(trainer.model, down.prompt_ids, down.completion_ids).sum())
    assert after_up > sum(up.sampler_logprobs) and after_down < sum(down.sampler_logprobs)
    # the policy moved away from the reference: the next update sees a positive KL; the
    # adapter and the optimizer state survive a save and a reload (the next iteration)
    saved = trainer.save(tmp_path / "adapter")
    assert (saved / "optimizer.pt").exists() and (saved / "adapter_config.json").exists()
    again = GRPOTrainer(tiny_llama, cfg, adapter=saved)
    with torch.no_grad():
        assert math.isclose(float(sequence_logprobs(again.model, up.prompt_ids, up.completion_ids).sum()),
                            after_up, rel_tol=1e-5)
    assert again.update([_on_policy(again, up.prompt_ids, up.completion_ids, 1.0)])["kl"] > 0
    assert again.optimizer.state_dict()["state"]  # Adam's moments came back


def test_a_drawn_decision_imitated_rises_past_the_clip_that_holds_a_sampled_one(tiny_llama: Path) -> None:
    """Within one iteration the clipped ratio stops a token's rise once it passes 1 + clip_eps (Adam's
    momentum and the shared LoRA carry it somewhat further); self-imitation is not held there (why a
    drawn `explore` the model gives e^-7 needs it)."""
    import torch

    cfg = GRPOConfig(learning_rate=2e-3, kl_coef=0.0, epochs=40, minibatch=1, lora_layers=1, lora_r=4, lora_alpha=8,
                     threads=1)
    rises = {}
    for imitate in (False, True):
        trainer = GRPOTrainer(tiny_llama, cfg)
        r = _on_policy(trainer, [1, 2, 3, 4], [30, 31], 1.0)
        if imitate:
            r = r.model_copy(update={"sampler_logprobs": [], "imitate": True})
        before = torch.tensor(_on_policy(trainer, [1, 2, 3, 4], [30, 31], 1.0).sampler_logprobs)
        trainer.update([r])
        with torch.no_grad():
            rises[imitate] = float((sequence_logprobs(trainer.model, r.prompt_ids, r.completion_ids) - before).max())
    assert rises[False] > math.log(1 + cfg.clip_eps)  # it rose to the clip (and past it, as said)
    assert rises[True] > 1.5 * rises[False]


def test_lora_sits_on_the_top_layers_only(tiny_llama: Path) -> None:
    trainer = GRPOTrainer(tiny_llama, GRPOConfig(lora_layers=1, lora_r=2, lora_alpha=4))
    names = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert names and all(".layers.1." in n and "lora_" in n for n in names)
    assert {n.split(".")[-4] for n in names} == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_the_layers_without_lora_run_once_and_the_update_is_the_same(tmp_path: Path) -> None:
    """The bottom layers (no LoRA) run once per distinct sequence and the reference and policy
    passes start from their output: the same log-probs, KL and adapter as running every layer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from polar.llm.rl import frozen_layers

    torch.manual_seed(1)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / "ckpt")
    gcfg = GRPOConfig(learning_rate=5e-3, minibatch=2, lora_layers=2, lora_r=4, lora_alpha=8, threads=1)
    a, b = GRPOTrainer(tmp_path / "ckpt", gcfg), GRPOTrainer(tmp_path / "ckpt", gcfg)
    assert frozen_layers(a.model) == 2
    seqs = [([1, 2, 3, 4], [10, 11, 12], 1.0), ([1, 2, 3, 5], [20, 21], -1.0), ([1, 2, 3, 4], [10, 11, 12], 1.0)]
    for _ in range(2):  # the second update: the adapter is no longer zero, the KL not 0
        ra = [_on_policy(a, p, c, adv) for p, c, adv in seqs]
        sa, sb = a.update(ra), b.update(ra, share_frozen=False)
        assert sa["frozen_layers"] == 2 and sb["frozen_layers"] == 0
        for k in ("loss", "kl", "ratio", "clip_frac"):
            assert math.isclose(sa[k], sb[k], rel_tol=1e-5, abs_tol=1e-7), k
    assert sa["kl"] > 0
    pa = dict(a.model.named_parameters())
    for n, p in b.model.named_parameters():
        if p.requires_grad:
            assert torch.allclose(p, pa[n], atol=1e-6), n
    with torch.no_grad():  # the model's own layers are back after each pass
        lm = a.model.get_base_model()
        assert len(lm.model.layers) == 4 and not isinstance(lm.model.norm, torch.nn.Identity)
        assert torch.allclose(sequence_logprobs(a.model, [1, 2, 3, 5], [20, 21]),
                              sequence_logprobs(b.model, [1, 2, 3, 5], [20, 21]), atol=1e-6)


# --- token faithfulness --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm_tok():
    require_model("smollm2-135m")
    from polar.llm.finetune import load_tokenizer

    return load_tokenizer("smollm2-135m")


def _call(tok, reply: str, **kw):  # noqa: ANN001, ANN202
    from polar.llm.record import CallRecord

    messages = [{"role": "system", "content": "Plan."}, {"role": "user", "content": "Goal: at(goal)"}]
    ids = tok(reply, add_special_tokens=False)["input_ids"]
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    n_prompt = len(prompt if isinstance(prompt, list) else prompt["input_ids"])
    fields = {"call_id": "c1", "time": 0.0, "model": "m", "messages": messages, "reply": reply,
              "prompt_tokens": n_prompt, "completion_tokens": len(ids), "token_ids": ids, "token_ids_source": "sampled",
              "logprobs": {"content": [{"token": tok.decode([i]), "logprob": -0.1} for i in ids]}}
    return CallRecord.model_validate(fields | kw)


def test_a_call_becomes_the_exact_sampled_tokens(smollm_tok) -> None:
    call = _call(smollm_tok, '{"decision": {"kind": "finish", "success": true}}')
    r = rollout_from_call(smollm_tok, call, 0.5)
    assert r is not None and r.completion_ids == call.token_ids and len(r.prompt_ids) == call.prompt_tokens
    assert r.sampler_logprobs == [-0.1] * len(call.token_ids) and r.advantage == 0.5
    # ids re-tokenised from the text are not the sampled ones: not scored (the caller counts it)
    assert rollout_from_call(smollm_tok, call.model_copy(update={"token_ids_source": "server-tokenizer"}), 1.0) is None


def test_a_drawn_call_is_imitated_as_the_tokenizer_writes_it(smollm_tok) -> None:
    """The grammar forced a drawn skill's name one prefix at a time (`e`+`x`+`pl`+`ore`): imitated,
    the trainer scores the reply as the tokenizer splits it, then the end-of-turn token."""
    head, tail = '{"decision": {"kind": "skill", "skill": "', '", "args": {}}}'
    reply = head + "explore" + tail
    odd = [i for piece in (head, "e", "x", "pl", "ore", tail) for i in smollm_tok(piece, add_special_tokens=False)["input_ids"]]
    ids = [*odd, smollm_tok.eos_token_id]
    assert smollm_tok.decode(odd) == reply and odd != smollm_tok(reply, add_special_tokens=False)["input_ids"]
    lp = {"content": [{"token": smollm_tok.decode([i]) if i != smollm_tok.eos_token_id else "", "logprob": -0.1}
                      for i in ids]}
    call = _call(smollm_tok, reply, token_ids=ids, completion_tokens=len(ids), logprobs=lp, forced_skill="explore")
    r = rollout_from_call(smollm_tok, call, 1.0, imitate_forced=True)
    assert r is not None and r.imitate and r.sampler_logprobs == []
    assert r.completion_ids == [*smollm_tok(reply, add_special_tokens=False)["input_ids"], smollm_tok.eos_token_id]
    # without the option, or for a call the model chose, the sampled ids as they are
    assert rollout_from_call(smollm_tok, call, 1.0).completion_ids == ids
    unforced = call.model_copy(update={"forced_skill": None})
    r = rollout_from_call(smollm_tok, unforced, 1.0, imitate_forced=True)
    assert not r.imitate and r.completion_ids == ids and len(r.sampler_logprobs) == len(ids)


def test_llama_servers_end_of_turn_token_is_scored_but_not_part_of_the_reply(smollm_tok) -> None:
    """llama-server's sampled ids end with the end-of-turn token that stopped the reply: it is
    scored (with its log-prob), while the text check compares the ids before it to the reply."""
    reply = '{"decision": {"kind": "finish", "success": true}}'
    ids = [*smollm_tok(reply, add_special_tokens=False)["input_ids"], smollm_tok.eos_token_id]
    lp = {"content": [{"token": smollm_tok.decode([i]) if i != smollm_tok.eos_token_id else "", "logprob": -0.1, "id": i}
                      for i in ids]}
    call = _call(smollm_tok, reply, token_ids=ids, completion_tokens=len(ids), logprobs=lp)
    r = rollout_from_call(smollm_tok, call, 1.0)
    assert r is not None and r.completion_ids == ids and r.completion_ids[-1] == smollm_tok.eos_token_id
    assert len(r.sampler_logprobs) == len(ids)
    # an ordinary token at the end is not forgiven: the ids must decode to the sampled text
    bad = [*ids[:-1], ids[0]]
    with pytest.raises(TokenizationMismatch, match="its sampled token ids decode to"):
        rollout_from_call(smollm_tok, call.model_copy(update={"token_ids": bad}), 1.0)


def test_a_code_fence_the_server_sampled_but_left_out_of_the_reply_is_scored(smollm_tok) -> None:
    """llama-server with a JSON-schema response_format may sample a code fence around the object
    and return the object alone: the trainer scores every sampled token, fence included."""
    reply = '{"decision": {"kind": "finish", "success": true}}'
    sampled = f"```json{reply}\n```"
    ids = [*smollm_tok(sampled, add_special_tokens=False)["input_ids"], smollm_tok.eos_token_id]
    lp = {"content": [{"token": "", "bytes": [], "logprob": -0.1, "id": i} if i == smollm_tok.eos_token_id else
                      {"token": smollm_tok.decode([i]), "bytes": list(smollm_tok.decode([i]).encode()), "logprob": -0.1,
                       "id": i} for i in ids]}
    call = _call(smollm_tok, reply, token_ids=ids, completion_tokens=len(ids), logprobs=lp)
    r = rollout_from_call(smollm_tok, call, 1.0)
    assert r is not None and r.completion_ids == ids and len(r.completion_ids) > len(smollm_tok(reply)["input_ids"])
    # log-probs of another reply: an error, not a silent mis-scoring
    with pytest.raises(TokenizationMismatch, match="is not part of the text the server sampled"):
        rollout_from_call(smollm_tok, call.model_copy(update={"reply": '{"decision": {"kind": "plan"}}'}), 1.0)


def test_a_tokenisation_mismatch_is_an_error(smollm_tok) -> None:
    call = _call(smollm_tok, '{"decision": {"kind": "finish", "success": true}}')
    with pytest.raises(TokenizationMismatch, match=r"call c1: the trainer's chat template gives a \d+-token prompt, "
                                                   r"the server counted \d+"):
        rollout_from_call(smollm_tok, call.model_copy(update={"prompt_tokens": call.prompt_tokens + 1}), 1.0)
    other = list(call.token_ids)
    other[2] = other[2] + 1
    with pytest.raises(TokenizationMismatch, match="call c1: its sampled token ids decode to"):
        rollout_from_call(smollm_tok, call.model_copy(update={"token_ids": other}), 1.0)

    def shifted(text: str) -> list[int]:  # a server whose vocabulary is another model's
        return [i + 1 for i in smollm_tok(text, add_special_tokens=False)["input_ids"]]

    with pytest.raises(TokenizationMismatch, match="split the probe string differently: .* first difference at token 0"):
        check_tokenizer(smollm_tok, shifted)


@pytest.mark.timeout(600)
def test_the_served_models_tokenizer_matches_the_trainers(smollm_tok, tmp_path, monkeypatch) -> None:
    """A real llama.cpp server: its /extras/tokenize splits the probe as the trainer does, and a
    real sampled call's prompt length and token ids pass the per-call checks."""
    require_engine()
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / "cache"))
    from polar.llm.client import LLMClient
    from polar.llm.record import CallRecorder, read_records
    from polar.llm.serve import ServerSettings, ensure_server, stop
    from polar.llm.settings import LLMSettings
    from polar.llm.tokens import ServerTokenizer

    server = ServerSettings(model="smollm2-135m", port=free_port(), threads=1, n_ctx=512)
    try:
        ensure_server(server, lambda m: None)
        check_tokenizer(smollm_tok, ServerTokenizer(server.api_base).tokenize)
        settings = LLMSettings(model="openai/smollm2-135m", api_base=server.api_base, server=server, logprobs=True,
                               top_logprobs=1, tokenizer="server", temperature=1.0, max_tokens=12)
        client = LLMClient(settings, recorder=CallRecorder(tmp_path / "calls.jsonl"))
        client.complete([{"role": "system", "content": "You plan."}, {"role": "user", "content": "Say a JSON object."}])
    finally:
        stop(server.host, server.port)
    call = read_records(tmp_path / "calls.jsonl")[0]
    r = rollout_from_call(smollm_tok, call, 1.0)
    assert r is not None, f"no sampled ids: {call.token_ids_source}"
    assert len(r.prompt_ids) == call.prompt_tokens and r.completion_ids == call.token_ids


@pytest.mark.timeout(900)
def test_llama_server_samples_concurrently_and_the_trainer_scores_exactly_its_ids(smollm_tok, tmp_path) -> None:
    """llama-server with 2 slots, two schema-constrained decisions sampled at once (T=1) by two
    clients writing one call record: each record's token ids are the ids the server sent with
    its log-probs (the end-of-turn token included), and they pass the trainer's checks."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.llm.test_llama_server import require_llama_server

    require_llama_server()  # the run's cache links the built binary (tests/conftest.py)
    from polar.llm.client import LLMClient
    from polar.llm.record import CallRecorder, read_records
    from polar.llm.serve import ServerSettings, ensure_server, stop
    from polar.llm.settings import LLMSettings
    from polar.llm.tokens import ServerTokenizer
    from polar.planners.parse import decision_json_schema

    server = ServerSettings(model="smollm2-135m", engine="llama-server", parallel=2, port=free_port(), threads=1,
                            n_ctx=512)
    settings = LLMSettings(model="openai/smollm2-135m", api_base=server.api_base, server=server, logprobs=True,
                           top_logprobs=1, tokenizer="server", temperature=1.0, max_tokens=48, seed_per_call=True)
    messages = [{"role": "system", "content": "You plan. Reply with one JSON decision."},
                {"role": "user", "content": "Goal: at(goal). Skills: goto(color, object), toggle(). Decide."}]
    schema = {"type": "json_object", "schema": decision_json_schema()}
    try:
        ensure_server(server, lambda m: None)
        check_tokenizer(smollm_tok, ServerTokenizer(server.api_base).tokenize)  # llama-server's /tokenize
        clients = [LLMClient(settings, recorder=CallRecorder(tmp_path / "calls.jsonl")) for _ in range(2)]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda c: c.complete(messages, response_format=schema), clients))
    finally:
        stop(server.host, server.port)
    calls = read_records(tmp_path / "calls.jsonl")
    assert len(calls) == 2  # one whole line each, though two recorders wrote at once
    # each request its own sampler seed, recorded (llama-server samples concurrent equal prompts alike)
    seeds = [c.params["seed"] for c in calls]
    assert all(isinstance(x, int) for x in seeds) and seeds[0] != seeds[1]
    assert "seed_per_call" not in LLMSettings(model="m").model_dump() and settings.model_dump()["seed_per_call"]
    for call in calls:
        ids = [t["id"] for t in call.logprobs["content"]]
        assert call.token_ids == ids and call.token_ids_source == "sampled" and call.token_ids_match, call
        if call.finish_reason == "stop":
            assert ids[-1] in smollm_tok.all_special_ids  # the token that ended the turn, sampled and scored
        r = rollout_from_call(smollm_tok, call, 1.0)
        assert r is not None and r.completion_ids == ids and len(r.prompt_ids) == call.prompt_tokens
        assert len(r.sampler_logprobs) == len(ids)
