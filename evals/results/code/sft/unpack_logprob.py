"""Teacher-forced log-prob of a program's unpack line after `def act(obs):`, old vs new prompt."""

import sys

import torch

sys.path.insert(0, "/tmp/code-explore")
import old_code_tasks as old
from transformers import AutoModelForCausalLM, AutoTokenizer

from polar.evals.code_tasks import TASKS, task_messages

torch.set_num_threads(1)
OLD_LINE = {
    "cartpole": "x, v, a, w = obs",
    "acrobot": "w1, w2 = obs[4], obs[5]",
    "mountaincar": "pos, vel = obs",
    "pendulum": "c, s, w = obs",
    "maze": "dx, dy, vx, vy = obs",
}


def old_messages(t):
    return [
        {
            "role": "system",
            "content": "Write a Python controller: a function act(obs) that returns one action. Use only plain Python and the math module. Reply with the code only.",
        },
        {
            "role": "user",
            "content": f"Task: {t.title}. {t.goal}\nobs = {t.observation}\nact(obs) returns {t.action}\nScore: {t.score}",
        },
    ]


def lp(model, tok, msgs, prefix, target):
    ctx = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) + prefix
    enc = tok(ctx + target, add_special_tokens=False, return_offsets_mapping=True)
    b = enc.input_ids
    first = next(
        i for i, (s0, e0) in enumerate(enc.offset_mapping) if e0 > len(ctx)
    )  # a token straddling counts
    a = b[:first]
    ids = torch.tensor([b])
    with torch.no_grad():
        logits = model(ids).logits[0, :-1].log_softmax(-1)
    return sum(logits[i - 1, b[i]].item() for i in range(len(a), len(b)))


for path in sys.argv[1:]:
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()
    for name, t in TASKS.items():
        pre = "def act(obs):\n"
        new = lp(model, tok, task_messages(t), pre, "    " + ", ".join(t.names) + " = obs")
        o = lp(model, tok, old_messages(old.TASKS[name]), pre, "    " + OLD_LINE[name])
        print(
            f"{path.split('/')[-2] if 'runs' in path else 'base'} {name}: old prompt + old line {o:.2f}; new prompt + new line {new:.2f}",
            flush=True,
        )
