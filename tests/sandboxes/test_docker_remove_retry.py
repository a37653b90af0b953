"""`_remove` keeps trying a removal the engine refuses (a loaded Podman refuses while the
container is still stopping) instead of leaving an exited container behind."""
from __future__ import annotations

import logging

import docker.errors
import pytest

from polar.sandboxes import docker as sandbox_docker


class _Refusing:
    """A container handle whose engine refuses the first `refusals` removals."""

    short_id = "abc123"

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.removals = 0
        self.waits = 0

    def remove(self, force: bool) -> None:
        self.removals += 1
        if self.removals <= self.refusals:
            raise docker.errors.APIError("container state improper")

    def wait(self, timeout: int) -> None:
        self.waits += 1


def test_a_removal_refused_many_times_still_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_docker.time, "sleep", lambda s: None)
    container = _Refusing(refusals=8)
    assert sandbox_docker._remove(container, None)
    assert container.removals == 9
    assert container.waits >= 4  # past the quick retries it waits for the container to stop


def test_a_container_gone_already_counts_as_removed() -> None:
    class Gone(_Refusing):
        def remove(self, force: bool) -> None:
            raise docker.errors.NotFound("no such container")

    assert sandbox_docker._remove(Gone(0), None)


def test_giving_up_is_logged_with_the_engines_reason(monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="polar.sandboxes.docker"):
        assert not sandbox_docker._remove(_Refusing(refusals=10**6), None, patience_s=0.3)
    assert "abc123" in caplog.text and "state improper" in caplog.text


def test_finish_removals_waits_for_removals_begun_while_it_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A removal started while `finish_removals` is waiting (a pool's start thread discarding
    what it started after the pool closed) is waited for too, not left half done."""
    import time

    done: list[str] = []
    real_remove = sandbox_docker._remove  # other tests' removals may still be under way: theirs stay real

    def slow_remove(container: object, conn: object, patience_s: float = 120.0) -> bool:
        if not isinstance(container, str):
            return real_remove(container, conn, patience_s)  # type: ignore[arg-type]
        time.sleep(0.3)
        if container == "first":
            sandbox_docker._discard("late")  # begun while the first is still being removed
        done.append(container)
        return True

    monkeypatch.setattr(sandbox_docker, "_remove", slow_remove)
    sandbox_docker._discard("first")
    sandbox_docker.finish_removals(timeout=10)
    assert sorted(done) == ["first", "late"]
