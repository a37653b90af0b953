"""What a student's prompt tokens are made of, on a teacher's recorded episodes (issue 42,
docs/crafter.md 6d): each kept decision is rendered with the student profile's templates, as the
dataset stage does (`polar.planners.dataset`), split into train and validation and deduplicated
as there, and tokenised with the student's tokenizer (SmolLM2's chat template). Per profile: the
prompt and decision tokens per example, the share of each line of the user message (`Task:`,
`Skills:`, `Facts:`, `Done:`, `Note:`; the rest is the system message and the chat template),
the facts by predicate name, and what one SFT pass over the training split costs at a given
speed (tokens/s).

    python benchmarks/planner_prompt_tokens.py runs/crafter-planner/teacher/cells \\
        --student student-crafter --student student-crafter-short --keep outcome --out tokens.json

A section's tokens are counted alone (no special tokens), so the sections add up to a little
less than the prompt: the difference is shown as `system + chat template`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from polar.llm.dataset import Example, dedup, split_of
from polar.llm.finetune import load_tokenizer, tokenize_example
from polar.planners.dataset import Keep, Renderer, build_examples, iter_episodes

SECTIONS = ("Task:", "Skills:", "Facts:", "Goal:", "Done:", "Note:")
ATOM = re.compile(r"(?:not )?[a-z_]+(?:\([^)]*\))?")


def split_examples(examples: list[Example], val_fraction: float) -> dict[str, list[Example]]:
    """The dataset stage's splits (by episode seed) with its deduplication."""
    splits: dict[str, list[Example]] = {"train": [], "validation": []}
    for ex in examples:
        splits[split_of(ex.seed, val_fraction)].append(ex)
    return {name: dedup(exs)[0] for name, exs in splits.items()}


def measure(examples: list[Example], tok: Any) -> dict[str, Any]:
    """Prompt and completion tokens per example, and the user message's sections."""
    count = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    prompts, completions = [], []
    sections: Counter[str] = Counter()
    facts: Counter[str] = Counter()
    listed = 0  # examples whose target skill is on the prompt's `Skills:` line
    for ex in examples:
        skills = next((t for t in ex.messages[-1]["content"].splitlines() if t.startswith("Skills:")), "")
        target = json.loads(ex.completion)["decision"].get("skill")
        listed += target is not None and target in {w.split("(")[0] for w in skills.split()[1:]}
        t = tokenize_example(tok, ex)
        c = sum(t["completion_mask"])
        prompts.append(len(t["input_ids"]) - c)
        completions.append(c)
        shown = 0
        for line in ex.messages[-1]["content"].splitlines():
            head = next((s for s in SECTIONS if line.startswith(s)), None)
            if head is None:
                continue
            n = count(line)
            sections[head] += n
            shown += n
            if head == "Facts:":
                for atom in ATOM.findall(line[len(head):]):
                    facts[atom.split("(")[0]] += count(" " + atom)
        sections["system + chat template"] += prompts[-1] - shown
    n = len(examples)
    return {
        "examples": n,
        "prompt_tokens": sum(prompts), "completion_tokens": sum(completions),
        "prompt_mean": round(sum(prompts) / n, 1), "prompt_median": statistics.median(prompts),
        "prompt_max": max(prompts), "completion_mean": round(sum(completions) / n, 1),
        "target_skill_listed": listed,
        "sections_mean": {k: round(v / n, 1) for k, v in sections.most_common()},
        "facts_mean": {k: round(v / n, 1) for k, v in facts.most_common()},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("teacher", nargs="+", help="the teacher's episodes (cell files, episode.json or folders)")
    ap.add_argument("--student", action="append", required=True, help="a student profile (repeatable)")
    ap.add_argument("--keep", default="outcome", choices=["episode", "outcome", "both"])
    ap.add_argument("--val-fraction", type=float, default=0.2)
    ap.add_argument("--tokenizer", default="smollm2-135m")
    ap.add_argument("--tokens-per-s", type=float, default=132.0, help="SFT speed for the pass's cost (the "
                    "Crafter run's: 281,199 tokens in 2,134 s)")
    ap.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = ap.parse_args(argv)
    tok = load_tokenizer(args.tokenizer)
    episodes = list(iter_episodes(args.teacher))
    report: dict[str, Any] = {"teacher": args.teacher, "episodes": len(episodes),
                              "decisions": sum(len(r.decisions) for r in episodes), "keep": args.keep,
                              "tokenizer": args.tokenizer, "tokens_per_s": args.tokens_per_s, "students": {}}
    keep: Keep = args.keep
    for student in args.student:
        examples, skipped = build_examples(episodes, keep=keep, renderer=Renderer.for_profile(student))
        splits = split_examples(examples, args.val_fraction)
        train = measure(splits["train"], tok)
        tokens = train["prompt_tokens"] + train["completion_tokens"]
        report["students"][student] = {
            "skipped": dict(skipped), "train": train,
            "validation_examples": len(splits["validation"]),
            "pass_tokens": tokens, "pass_minutes": round(tokens / args.tokens_per_s / 60, 1),
        }
        print(f"{student}: {train['examples']} train examples, {train['prompt_mean']} + "
              f"{train['completion_mean']} tokens each (median prompt {train['prompt_median']}, max "
              f"{train['prompt_max']}); one pass {tokens:,} tokens = {tokens / args.tokens_per_s / 60:.0f} min "
              f"at {args.tokens_per_s:g} tokens/s")
        print(f"  the target's skill on the Skills line: {train['target_skill_listed']} of {train['examples']}")
        print("  sections:", ", ".join(f"{k} {v}" for k, v in train["sections_mean"].items()))
        print("  facts:", ", ".join(f"{k} {v}" for k, v in list(train["facts_mean"].items())[:14]))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
