"""Turn the call record into a chat fine-tuning dataset (OpenAI / TRL `messages` format).

Each kept call becomes one line `{"messages": [...request..., {"role": "assistant", ...}]}`.
Left out: calls of frozen helpers (their behaviour is not what we train), replies that
failed validation (unless asked), cache replays of a call already kept, other roles when
`roles` is given, and calls from episodes that did not succeed when `episodes` is given.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from polar.errors import ConfigError
from polar.llm.record import read_records


def successful_episodes(folder: str | Path) -> set[str]:
    """Episode ids of the successful episode records (*.json) under `folder`."""
    from polar.episode import EpisodeRecord

    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{root}: episode folder not found")
    ids = set()
    for p in sorted(root.rglob("*.json")):
        try:
            rec = EpisodeRecord.load(p)
        except (ValueError, OSError):
            continue  # not an episode record (a summary, a config ...)
        if rec.success:
            ids.add(rec.episode_id)
    return ids


def export_chat_dataset(records: str | Path, out: str | Path, *, roles: list[str] | None = None,
                        include_invalid: bool = False, episodes: set[str] | None = None) -> Counter[str]:
    """Write the dataset; returns counts: `written` and one `skipped:<why>` per reason."""
    counts: Counter[str] = Counter()
    seen: set[tuple[str | None, str]] = set()
    lines = []
    for rec in read_records(records):
        if rec.frozen:
            counts["skipped:frozen"] += 1
        elif roles and rec.role not in roles:
            counts["skipped:role"] += 1
        elif rec.valid is False and not include_invalid:
            counts["skipped:invalid"] += 1
        elif episodes is not None and rec.episode_id not in episodes:
            counts["skipped:episode-not-successful"] += 1
        elif (rec.cache_key, rec.reply) in seen:
            counts["skipped:duplicate"] += 1
        else:
            seen.add((rec.cache_key, rec.reply))
            messages = [*rec.messages, {"role": "assistant", "content": rec.reply}]
            lines.append(json.dumps({"messages": messages}, ensure_ascii=False))
            counts["written"] += 1
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("".join(line + "\n" for line in lines))
    return counts
