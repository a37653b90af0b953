"""Build planner fine-tuning datasets from episode records (`polar llm dataset`).

Two sources, mixed freely:

- **a teacher's episodes** (e.g. the symbolic planner's, run with `record_context`): each
  decision's recorded planner context is rendered with the *student's* templates, so the
  example is exactly the prompt the student will see when it plans;
- **the model's own episodes**: each decision's first model call is looked up in the call
  record (by call id), and its messages, template and token ids are kept as they were.

What the harness says decides what enters: `keep="episode"` keeps the decisions of episodes
the harness (or the goal predicates) confirmed successful, `keep="outcome"` the decisions
whose own execution succeeded, `keep="both"` (default) decisions that did both. A planner's
claim of success that the harness did not confirm (`success_source: planner-claim`) never
counts, nor does a `finish` decision outside a confirmed success. The target is always the
canonical decision JSON, never the raw reply.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from polar.episode import DecisionRecord, EpisodeRecord
from polar.errors import ConfigError, PlannerError
from polar.harnesses.base import HarnessSpec
from polar.llm.dataset import (
    DatasetInfo,
    Example,
    canonical_json,
    dedup,
    split_of,
    write_dataset,
)
from polar.llm.record import CallRecord, read_records
from polar.planners.base import Planner, PlannerContext, SkillInfo
from polar.planners.decisions import Decision, DecisionEnvelope, Finish
from polar.planners.schema import decision_schema, emitted_order

Keep = Literal["episode", "outcome", "both"]
CONFIRMED = ("harness", "harness-rule", "goal-predicates")  # success sources that are not the planner's word
Messages = list[dict[str, Any]]


# --- reading episode records -------------------------------------------------------------------


def iter_episodes(paths: Iterable[str | Path]) -> Iterator[EpisodeRecord]:
    """Episode records from `polar task` files (episode.json), eval cell files (their
    `episodes`) and folders holding either (searched recursively). Other JSON is skipped."""
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"{p}: no such episode file or folder")
        files = sorted(p.rglob("*.json")) if p.is_dir() else [p]
        for f in files:
            try:
                data = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            items = data.get("episodes") if isinstance(data, dict) and "episodes" in data else [data]
            for item in items if isinstance(items, list) else []:
                try:
                    yield EpisodeRecord.model_validate(item)
                except ValidationError:
                    continue  # a suite summary, a report, a config: not an episode


def confirmed_success(rec: EpisodeRecord) -> bool:
    """The harness (or the goal predicates) says the episode succeeded, not the planner."""
    return rec.success and rec.extra.get("success_source") in CONFIRMED


def outcome_succeeded(d: DecisionRecord, episode_confirmed: bool) -> bool:
    """A decision's own execution succeeded; a `finish` counts only when it claimed success
    and the harness confirmed the episode."""
    if d.decision.get("kind") == "finish":
        return bool(d.decision.get("success")) and episode_confirmed
    return bool(d.outcomes) and all(o.success for o in d.outcomes)


def kept(d: DecisionRecord, episode_confirmed: bool, keep: Keep) -> str | None:
    """None when the decision enters the dataset, else why not."""
    if d.decision.get("kind") == "error":
        return "planner-error"
    ok_episode, ok_outcome = episode_confirmed, outcome_succeeded(d, episode_confirmed)
    if keep in ("episode", "both") and not ok_episode:
        return "episode-not-successful"
    if keep in ("outcome", "both") and not ok_outcome:
        return "outcome-not-successful"
    return None


# --- targets -----------------------------------------------------------------------------------


def canonical_decision(decision: dict[str, Any], skills: list[SkillInfo] | None = None) -> str:
    """`{"decision": {...}}` as one canonical text: validated, `reason` dropped (it costs
    tokens and is not executed), fields in the order of the decision schema (kind first), a
    skill's arguments in the order of its declared parameters. With `skills`, every object's keys
    are then in the order the served grammar emits them (required first: `emitted_order`, from
    the schema the planner sends, `decision_schema`), so each target is a reply the model can give."""
    d = DecisionEnvelope.model_validate({"decision": decision}).decision
    body = d.model_dump(mode="json", exclude={"reason"}, exclude_none=True)
    order = ["kind", *[k for k in type(d).model_fields if k not in ("kind", "reason")]]
    body = {k: body[k] for k in order if k in body}
    if "args" in body and skills:
        params = next((list(s.parameters) for s in skills if s.name == body["skill"].partition("@")[0]), None)
        if params:
            body["args"] = {k: body["args"][k] for k in sorted(body["args"], key=lambda k: (
                params.index(k) if k in params else len(params), k))}
    envelope: dict[str, Any] = {"decision": body}
    if skills:
        envelope = emitted_order(envelope, decision_schema(skills, "auto"))
    return canonical_json(envelope)


def decision_label(decision: dict[str, Any]) -> str:
    return str(decision.get("skill", "")).partition("@")[0] if decision.get("kind") == "skill" \
        else str(decision.get("kind"))


# --- the two sources ---------------------------------------------------------------------------


class Renderer:
    """Renders a recorded planner context with a student profile's templates.

    `paraphrases` maps a task string to other phrasings of it; each episode is then rendered
    with one phrasing (the original included), chosen by its env seed and task (by its id when
    it has no seed), so the student learns the goal from more than one wording while held-out
    phrasings stay unseen, and the same episodes always give the same dataset."""

    def __init__(self, messages: Callable[[PlannerContext], Messages], template: str, template_hash: str,
                 paraphrases: dict[str, list[str]] | None = None) -> None:
        self.messages = messages
        self.template, self.template_hash = template, template_hash
        self.paraphrases = paraphrases or {}

    @classmethod
    def for_profile(cls, profile: str, paraphrases: dict[str, list[str]] | None = None) -> Renderer:
        """The student's templates, without starting its server or touching its caches."""
        from polar.planners.llm import LLMPlanner
        from polar.planners.profile import LLMProfile, load_planner_profile

        p = load_planner_profile(profile, {"cache_dir": None, "record_path": None, "server": None})
        if not isinstance(p, LLMProfile):
            raise ConfigError(f"--student {profile}: a student must be an LLM planner profile, not {p.backend}")
        planner = LLMPlanner(p)
        return cls(planner.messages, planner.template_name, planner.template_hash, paraphrases)

    def task_for(self, task: str, key: str) -> str:
        """The task or one of its phrasings, by episode `key`. A template may hold `{name}` slots (e.g.
        "pick up the {color} box"): they match one word and fill the same slots of the phrasings."""
        options = [task]
        # `template`, not `key`: reusing the parameter's name made every episode of a task hash
        # the last template, so one phrasing stood for all of them and the mission never trained
        for template, phrasings in self.paraphrases.items():
            pattern = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>\\w+)", re.escape(template)) + "$"
            if m := re.match(pattern, task):
                options += [p.format(**m.groupdict()) for p in phrasings]
        return options[int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % len(options)]

    def render(self, rec: EpisodeRecord, d: DecisionRecord) -> Messages:
        spec = HarnessSpec.model_validate(rec.extra["harness_spec"])
        ctx = PlannerContext.model_validate({**d.context, "spec": spec})  # type: ignore[dict-item]
        key = rec.episode_id if rec.seed is None else f"{rec.seed}|{rec.task}"
        return self.messages(ctx.model_copy(update={"task": self.task_for(ctx.task, key)}))


def index_calls(paths: Iterable[str | Path]) -> dict[str, CallRecord]:
    """Call records by call id (the planner role only; frozen helpers never train)."""
    out: dict[str, CallRecord] = {}
    for p in paths:
        for c in read_records(p):
            if not c.frozen:
                out[c.call_id] = c
    return out


def _own_example(rec: EpisodeRecord, d: DecisionRecord, call: CallRecord, target: str) -> Example:
    ids = call.token_ids
    exact = ids is not None and call.reply.strip() == target and getattr(call, "token_ids_match", None) is not False
    return Example(
        messages=call.messages, completion=target, template=call.template, template_hash=call.template_hash,
        source=f"self:{call.model}", harness_id=rec.harness_id, seed=rec.seed, episode_id=rec.episode_id,
        decision_index=d.index, skill=decision_label(d.decision),
        prompt_token_ids=getattr(call, "prompt_token_ids", None),
        completion_token_ids=list(ids) if exact and ids is not None else None,
    )


def build_examples(episodes: Iterable[EpisodeRecord], *, keep: Keep = "both",
                   renderer: Renderer | None = None, calls: dict[str, CallRecord] | None = None,
                   ) -> tuple[list[Example], Counter[str]]:
    """Examples from every kept decision; `skipped` counts the others by reason."""
    examples: list[Example] = []
    skipped: Counter[str] = Counter()
    calls = calls or {}
    for rec in episodes:
        if (rec.success or rec.extra.get("success_source") == "planner-claim") and not confirmed_success(rec):
            skipped["success-not-confirmed-by-harness"] += 1  # episodes; their decisions count below
        confirmed = confirmed_success(rec)
        for d in rec.decisions:
            why = kept(d, confirmed, keep)
            if why is not None:
                skipped[why] += 1
                continue
            skills = [SkillInfo.model_validate(s) for s in (d.context or {}).get("skills", [])]
            target = canonical_decision(d.decision, skills)
            first = next((calls[c.call_id] for c in d.llm_calls if c.call_id in calls), None)
            if first is not None:
                examples.append(_own_example(rec, d, first, target))
            elif d.llm_calls and renderer is None:
                skipped["call-record-missing"] += 1
            elif d.context is not None and renderer is not None and "harness_spec" in rec.extra:
                examples.append(Example(
                    messages=renderer.render(rec, d), completion=target, template=renderer.template,
                    template_hash=renderer.template_hash, source=f"teacher:{rec.agent}",
                    harness_id=rec.harness_id, seed=rec.seed, episode_id=rec.episode_id,
                    decision_index=d.index, skill=decision_label(d.decision)))
            else:
                skipped["no-context-or-call-record" if renderer is not None else "no-call-record"] += 1
    return examples, skipped


# --- DAgger: the teacher's decision on each state the student visited --------------------------


def teacher_decision(teacher: Planner, rec: EpisodeRecord, d: DecisionRecord) -> Decision:
    """What `teacher` decides from the context the student decided from (recorded with
    `record_context`). The teacher must plan from any state it is shown (the symbolic planner
    does: it keeps nothing between decisions, so a replayed context is the live one). A task
    it cannot read (a phrasing of the mission, which only the student is taught) is planned as
    the harness's mission, which is how the teacher played its own episodes."""
    spec = HarnessSpec.model_validate(rec.extra["harness_spec"])
    ctx = PlannerContext.model_validate({**(d.context or {}), "spec": spec})  # type: ignore[dict-item]
    teacher.reset()
    try:
        return teacher.decide(ctx)
    except PlannerError:
        mission = ctx.symbolic.mission if ctx.symbolic is not None else None
        if not mission or mission == ctx.task:
            raise
        teacher.reset()
        return teacher.decide(ctx.model_copy(update={"task": mission}))


def relabel_examples(episodes: Iterable[EpisodeRecord], teacher: Planner, calls: dict[str, CallRecord],
                     ) -> tuple[list[Example], Counter[str]]:
    """DAgger's labels: for every decision of the student's own episodes, the prompt exactly as
    the student saw it (its first call's messages) with the *teacher's* decision for that same
    state as the target, whatever the student replied and whatever came of it (the states a
    student's mistakes lead to are what behaviour cloning on the teacher's episodes never
    shows it). A state where the teacher gives up or cannot plan trains nothing."""
    examples: list[Example] = []
    skipped: Counter[str] = Counter()
    for rec in episodes:
        if "harness_spec" not in rec.extra:
            skipped["no-context"] += len(rec.decisions)
            continue
        for d in rec.decisions:
            first = next((calls[c.call_id] for c in d.llm_calls if c.call_id in calls), None)
            if d.context is None:
                skipped["no-context"] += 1  # a failed decision (no reply validated) records none
                continue
            if first is None:
                skipped["call-record-missing"] += 1
                continue
            try:
                decision = teacher_decision(teacher, rec, d)
            except PlannerError:
                skipped["teacher-no-plan"] += 1
                continue
            if isinstance(decision, Finish) and not decision.success:
                skipped["teacher-gave-up"] += 1
                continue
            skills = [SkillInfo.model_validate(s) for s in d.context.get("skills", [])]
            target = canonical_decision(decision.model_dump(mode="json"), skills)
            ex = _own_example(rec, d, first, target)
            examples.append(ex.model_copy(update={"source": f"teacher:{teacher.name}@{ex.source}",
                                                  "skill": decision_label(decision.model_dump(mode="json"))}))
    return examples, skipped


def build_dataset(sources: list[str | Path], out: str | Path, *, student: str | None = None,
                  calls: list[str | Path] | None = None, keep: Keep = "both", val_fraction: float = 0.2,
                  paraphrases: dict[str, list[str]] | None = None,
                  count_tokens: Callable[[Example], tuple[int, int]] | None = None,
                  tokenizer: str | None = None, teacher: str | Planner | None = None) -> DatasetInfo:
    """Read episodes, filter by what the harness says, split by episode seed, deduplicate
    (within each split) and write the dataset folder. Returns its info (also on disk).

    With `teacher` (a planner profile or planner), the episodes are the student's own, run with
    `record_context`: every decision is relabelled with the teacher's decision for its state
    (DAgger, `relabel_examples`) and `keep` does not apply."""
    if not 0 <= val_fraction < 1:
        raise ConfigError(f"val_fraction: must be in [0, 1), got {val_fraction}")
    if teacher is not None:
        from polar.planners.profile import load_planner

        labeller = load_planner(teacher) if isinstance(teacher, str | Path) else teacher
        examples, skipped = relabel_examples(iter_episodes(sources), labeller, index_calls(calls or []))
        keep = f"teacher:{teacher if isinstance(teacher, str | Path) else labeller.name}"  # type: ignore[assignment]
    else:
        renderer = Renderer.for_profile(student, paraphrases) if student else None
        examples, skipped = build_examples(iter_episodes(sources), keep=keep, renderer=renderer,
                                           calls=index_calls(calls or []))
    splits: dict[str, list[Example]] = {"train": [], "validation": []}
    for ex in examples:
        splits[split_of(ex.seed, val_fraction)].append(ex)
    for name in splits:
        splits[name], dropped = dedup(splits[name])
        if dropped:
            skipped[f"duplicate ({name})"] += dropped
    tokens = None
    if count_tokens is not None:
        tokens = Counter()
        for name, exs in splits.items():
            for ex in exs:
                p, c = count_tokens(ex)
                tokens[f"{name}_prompt"] += p
                tokens[f"{name}_completion"] += c
    info = DatasetInfo(sources=[str(s) for s in sources], student=student, keep=keep,
                       val_fraction=val_fraction, skipped=dict(skipped),
                       tokens=dict(tokens) if tokens is not None else None, tokenizer=tokenizer)
    return write_dataset(out, splits, info)


def read_paraphrases(path: str | Path) -> dict[str, list[str]]:
    """A YAML mapping: task string -> list of other phrasings of the same task."""
    from polar.config import read_yaml

    data = read_yaml(Path(path))
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(s, str) for s in v)
            for k, v in data.items()):
        raise ConfigError(f"{path}: expected a mapping of task strings to lists of phrasings")
    return {k: list(v) for k, v in data.items()}
