"""A run's metrics: `metrics.jsonl` (one JSON row per line) and TensorBoard events (one event
per row, holding all its scalars), both trimmable to what a checkpoint saw.

A checkpoint records how many rows and events were written before it; a resumed run first
cuts both logs back to those counts, so the rows written between that checkpoint and a
`kill -9` are not written twice (not even a final evaluation row written just before the
kill). Event files are TFRecord files: records are kept byte for byte.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

METRICS_FILE = "metrics.jsonl"
TB_DIR = "tb"


class RunLog:
    def __init__(self, out: Path, rows: int = 0, events: int = 0) -> None:
        self.out = out
        self.rows = rows  # lines in metrics.jsonl
        self.events = events  # scalar events in tb/
        self._tb: Any = None

    def open(self) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self._tb = SummaryWriter(str(self.out / TB_DIR))

    def write(self, row: dict[str, Any]) -> None:
        with open(self.out / METRICS_FILE, "a") as f:
            f.write(json.dumps(row) + "\n")
        self.rows += 1
        if self._tb is None:
            return
        from tensorboard.compat.proto.summary_pb2 import Summary
        from torch.utils.tensorboard.summary import scalar

        # One event holding the whole row, not one event per scalar: a third of the cost
        # per update; TensorBoard reads the same tags and steps.
        values = [val for k, v in row.items()
                  if isinstance(v, (int, float)) and k != "env_steps" and math.isfinite(v)
                  for val in scalar(k, v).value]
        if values:
            self._tb._get_file_writer().add_summary(Summary(value=values), row["env_steps"])
            self.events += 1

    def flush(self) -> None:
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None

    def trim(self) -> None:
        """Cut metrics.jsonl to `rows` lines and the TensorBoard events to `events`."""
        path = self.out / METRICS_FILE
        if path.exists():
            lines = path.read_text().splitlines(keepends=True)
            kept = [ln for ln in lines if ln.endswith("\n")][: self.rows]  # a torn last line goes too
            tmp = path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(kept))
            tmp.replace(path)
        trim_events(self.out / TB_DIR, self.events)


def _records(path: Path) -> Iterator[tuple[bytes, bytes]]:
    """(raw record, payload) of a TFRecord file, stopping at a record torn by a kill."""
    with open(path, "rb") as f:
        while True:
            header = f.read(12)  # uint64 length + uint32 masked crc of the length
            if len(header) < 12:
                return
            (length,) = struct.unpack("<Q", header[:8])
            payload = f.read(length)
            crc = f.read(4)
            if len(payload) < length or len(crc) < 4:
                return
            yield header + payload + crc, payload


def trim_events(tb_dir: Path, keep: int) -> None:
    """Keep the first event file's header record and the first `keep` scalar events of all
    event files (in TensorBoard's order: by file name), in one file; remove the others."""
    files = sorted(tb_dir.glob("events.out.tfevents.*")) if tb_dir.is_dir() else []
    if not files:
        return
    from tensorboard.compat.proto.event_pb2 import Event

    kept: list[bytes] = []
    summaries = 0
    for i, f in enumerate(files):
        for raw, payload in _records(f):
            if Event.FromString(payload).HasField("summary"):
                if summaries < keep:
                    kept.append(raw)
                    summaries += 1
            elif i == 0:
                kept.append(raw)  # the file_version header of the first file
    tmp = tb_dir / (files[0].name + ".tmp")
    tmp.write_bytes(b"".join(kept))
    tmp.replace(files[0])
    for f in files[1:]:
        f.unlink()
