"""Sample N programs per task from an HF checkpoint (temperature 0.7) and play them in the process sandbox."""

import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from polar.evals.code_runner import extract_program, run_program
from polar.evals.code_tasks import TASKS, task_messages
from polar.sandboxes.profiles import SandboxProfile

torch.set_num_threads(1)
torch.manual_seed(0)
path, n = sys.argv[1], int(sys.argv[2])
tok = AutoTokenizer.from_pretrained(path)
model = AutoModelForCausalLM.from_pretrained(path).eval()
for name, t in TASKS.items():
    ids = tok.apply_chat_template(
        task_messages(t), add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        out = model.generate(
            **ids,
            do_sample=True,
            temperature=0.7,
            max_new_tokens=100,
            num_return_sequences=n,
            pad_token_id=tok.eos_token_id,
        )
    ran = solved = 0
    for o in out:
        prog = tok.decode(o[ids["input_ids"].shape[1] :], skip_special_tokens=True)
        rec = run_program(t, prog, [100], SandboxProfile())
        e = rec.episodes[0]
        ran += e.error is None
        solved += e.success
        print(
            f"--- {name}: {e.error or 'ran'} ret {e.ret:.0f} success {e.success}\n{extract_program(prog)}",
            flush=True,
        )
    print(f"=== {name}: {ran}/{n} ran without error, {solved}/{n} solved seed 100", flush=True)
