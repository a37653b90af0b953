"""Two processes asking for the same shipped model at once: one merges and converts it, the
other waits on its lock and uses the GGUF the first one made (the merge's work folder and
temporary file have fixed names, so two merges at once would clobber each other)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from polar.files import file_lock, sha256_of
from polar.llm import adapters
from polar.llm.models import ModelEntry, record_checksum


def test_a_waiting_caller_uses_the_gguf_the_lock_holder_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "cache" / "models" / "shipped-abc.gguf"
    gguf.parent.mkdir(parents=True)
    entry = ModelEntry(name="shipped", format="gguf", path=str(gguf), engine="llamacpp",
                       source=f"shipped:{tmp_path / 'shipped'}")
    merges: list[Path] = []
    monkeypatch.setattr(adapters, "_merge_and_convert", lambda e, g: merges.append(g) or g)
    got: list[Path] = []
    with file_lock(gguf.with_name(gguf.name + ".lock")):  # another process is merging it
        waiter = threading.Thread(target=lambda: got.append(adapters.materialise(entry)))
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive() and not got, "materialise did not wait for the merge under way"
        gguf.write_bytes(b"GGUF made by the lock holder")
        record_checksum(gguf, sha256_of(gguf))
    waiter.join(10)
    assert got == [gguf] and merges == [], "the waiter merged again instead of using the finished GGUF"


def test_with_no_cached_gguf_the_caller_merges_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "shipped-abc.gguf"
    entry = ModelEntry(name="shipped", format="gguf", path=str(gguf), engine="llamacpp", source="shipped:x")
    merges: list[Path] = []
    monkeypatch.setattr(adapters, "_merge_and_convert", lambda e, g: merges.append(g) or g)
    assert adapters.materialise(entry) == gguf and merges == [gguf]
