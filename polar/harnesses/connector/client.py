"""`ConnectorHarness`: a harness whose game runs in its own process and may crash or hang.

A crash or a missed deadline never reaches the caller as an exception mid-episode: the game
is killed (its whole process group, reaped), the running episode ends as `truncated=True`
with `info["harness_error"]` naming the cause, and the next `reset()` starts a fresh
process. Only `max_restarts` consecutive failures raise `HarnessError`. A peer that breaks
the protocol (malformed or oversized frames) raises `ProtocolError`: that is a bug in the
game's connector, not bad luck, and retrying would hide it.
"""

from __future__ import annotations

import copy
import hashlib
import operator
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from polar.errors import HarnessError, ProtocolError
from polar.harnesses.base import Harness, HarnessSpec, StepResult, SymbolicState
from polar.harnesses.connector.config import ConnectorConfig
from polar.harnesses.connector.process import GameProcess, StartupFailed
from polar.harnesses.connector.protocol import PROTOCOL_VERSION
from polar.wire import ChannelClosed, ChannelTimeout, FrameEncoder


class _GameFailed(Exception):
    """The game process died or missed a deadline; `cause` is the text for harness_error."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class _Resources:
    """What must be released even if the harness is dropped without close()."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.game: GameProcess | None = None

    def release(self) -> None:
        if self.game is not None:
            self.game.kill()
            self.game = None
        shutil.rmtree(self.workdir, ignore_errors=True)


class ConnectorHarness(Harness):
    """Runs `config.command` as a game process and speaks the framed protocol with it."""

    def __init__(
        self,
        config: ConnectorConfig,
        harness_id: str,
        base_dir: Path,
        game_kwargs: dict[str, Any] | None = None,
        description: str | None = None,
    ) -> None:
        self.config = config
        self.harness_id = harness_id
        self.base_dir = Path(base_dir).resolve()
        self.game_kwargs = dict(game_kwargs or {})
        self.restarts = 0  # processes started after the first one (for records and tests)
        self._timeout = config.timeout_s
        self._failures = 0  # consecutive; a successful step clears it
        self._last_cause: str | None = None
        self._in_episode = False
        self._last_obs: Any = None
        self._t = 0
        # Re-seeding after a restart: the last explicit seed, resets since, and whether the
        # running process is a restarted one that has not been reset yet.
        self._seed: int | None = None
        self._resets_since_seed = 0
        self._restarted = False
        self._encode = FrameEncoder(config.max_frame_bytes)
        self._spec_frame = self._pack({"op": "spec", "protocol": PROTOCOL_VERSION,
                                       "kwargs": self.game_kwargs}, "spec")
        self._res = _Resources(Path(tempfile.mkdtemp(prefix="polar-conn-")))
        self._finalizer = weakref.finalize(self, self._res.release)
        try:
            reply = self._start()
            self.spec = self._build_spec(reply, description)
        except StartupFailed as err:
            self._finalizer()
            raise HarnessError(f"{harness_id}: the game process failed to start: {err.cause}") from None
        except BaseException:
            self._finalizer()
            raise
        self._spaces = (reply["observation_space"], reply["action_space"])
        self._has_symbolic = bool(reply.get("has_symbolic"))
        self._has_render = bool(reply.get("has_render"))
        self._max_steps = self.spec.max_steps
        act = self.spec.action_space
        self._discrete = (act.start or 0, act.n) if act.type == "discrete" else None
        self._step_frames: dict[int, bytes] = {}
        self._symbolic_frame = self._encode({"op": "symbolic"})
        self._ping_frame = self._encode({"op": "ping"})

    # -- set-up --------------------------------------------------------------------------
    def _pack(self, request: dict[str, Any], op: str) -> bytes:
        try:
            return self._encode(request)
        except ProtocolError as err:  # FrameTooLarge stays FrameTooLarge
            raise type(err)(f"{self.harness_id}: cannot send {op}: {err}") from None

    def _start(self) -> dict[str, Any]:
        """Start a process and do the spec handshake; raises StartupFailed on death/silence."""
        game = GameProcess(self.config, self.base_dir, self._res.workdir)
        self._res.game = game
        try:
            return self._call(game, self._spec_frame, "spec", self.config.startup_timeout_s)
        except _GameFailed as err:
            self._drop_game()
            raise StartupFailed(err.cause) from None
        except (HarnessError, ProtocolError):
            self._drop_game()
            raise

    def _build_spec(self, reply: dict[str, Any], description: str | None) -> HarnessSpec:
        fields = {k: reply[k] for k in ("observation_space", "action_space", "action_meanings",
                                        "reward_range", "max_steps", "reports_success",
                                        "reward_marks_success", "done_action",
                                        "predicate_vocabulary") if reply.get(k) is not None}
        text = description or reply.get("description") or f"Out-of-process game {self.config.command}"
        extra = {"connector": {"transport": self.config.transport, "kwargs": self.game_kwargs}}
        try:
            return HarnessSpec(id=self.harness_id, description=text, extra=extra, **fields)
        except ValidationError as err:
            raise ProtocolError(f"{self.harness_id}: the game's spec reply is invalid: "
                                f"{err.errors()[0]['loc']}: {err.errors()[0]['msg']}") from None

    # -- one request ---------------------------------------------------------------------
    def _call(self, game: GameProcess, frame: bytes, op: str, timeout: float) -> dict[str, Any]:
        channel = game.channel
        try:
            channel.send_frame(frame, timeout)
        except ChannelTimeout:
            raise _GameFailed(f"game process stopped reading requests ({op}) for {timeout:g} s") from None
        except ChannelClosed:
            raise _GameFailed(game.describe_exit(op)) from None
        try:
            reply = channel.recv(timeout)
        except ChannelTimeout:
            raise _GameFailed(f"no reply within {timeout:g} s to {op}") from None
        except ChannelClosed:
            raise _GameFailed(game.describe_exit(op)) from None
        except ProtocolError as err:
            self._drop_game()
            raise type(err)(f"{self.harness_id}: bad frame from the game in reply to {op}: {err}") from None
        if type(reply) is not dict or "ok" not in reply:
            self._drop_game()
            raise ProtocolError(f"{self.harness_id}: the reply to {op} must be a map with 'ok', "
                                f"got {type(reply).__name__}")
        if reply["ok"] is not True:
            tb = reply.get("traceback")
            where = f"\ngame traceback (innermost last):\n{tb}" if isinstance(tb, str) and tb.strip() else ""
            raise HarnessError(f"{self.harness_id}: the game failed on {op}: {reply.get('error')}{where}")
        return reply

    def _kill_game(self) -> None:
        if self._res.game is not None:
            self._res.game.kill()
            self._res.game = None

    def _drop_game(self) -> None:
        """After a protocol violation: the process and the running episode are both gone."""
        self._kill_game()
        self._in_episode = False

    def _fail(self, cause: str) -> None:
        """A crash or a missed deadline: the next step() ends the running episode with `cause`."""
        self._kill_game()
        self._failures += 1
        self._last_cause = cause

    def _ensure_game(self) -> GameProcess:
        """The running game, restarting it (within max_restarts) when it is gone."""
        if not self._finalizer.alive:
            raise HarnessError(f"{self.harness_id}: the harness is closed")
        while self._res.game is None:
            if self._failures > self.config.max_restarts:
                raise HarnessError(
                    f"{self.harness_id}: the game process failed {self._failures} times in a row "
                    f"(max_restarts={self.config.max_restarts}); last cause: {self._last_cause}")
            try:
                reply = self._start()
            except StartupFailed as err:
                self._fail(err.cause)
                continue
            self.restarts += 1
            self._restarted = True
            if (reply["observation_space"], reply["action_space"]) != self._spaces:
                self._drop_game()
                raise HarnessError(f"{self.harness_id}: the restarted game reports different spaces")
        return self._res.game

    # -- the Harness API -----------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self._seed, self._resets_since_seed = seed, 0
        else:
            self._resets_since_seed += 1
        frame = self._pack({"op": "reset", "seed": seed, "options": options}, "reset")
        while True:
            game = self._ensure_game()
            try:
                reply = self._call(game, self._reseeded(frame, seed, options), "reset", self._timeout)
                break
            except _GameFailed as err:
                self._fail(err.cause)
        self._restarted = False
        if "obs" not in reply:
            self._drop_game()
            raise ProtocolError(f"{self.harness_id}: the reply to reset lacks 'obs'")
        self._in_episode = True
        self._t = 0
        self._last_obs = reply["obs"]
        return reply["obs"], reply.get("info") or {}

    def _reseeded(self, frame: bytes, seed: int | None, options: dict[str, Any] | None) -> bytes:
        """The reset request for the running process. A restarted game starts from an
        unseeded RNG, so an unseeded reset() after a crash would make a seeded run
        irreproducible: it gets a seed derived from the last explicit seed and the number of
        resets since, the same in every run that crashes at the same point."""
        if seed is not None or not self._restarted or self._seed is None:
            return frame
        digest = hashlib.sha256(f"{self._seed}:{self._resets_since_seed}".encode()).digest()
        derived = int.from_bytes(digest[:4], "little")
        return self._pack({"op": "reset", "seed": derived, "options": options}, "reset")

    def step(self, action: Any) -> StepResult:
        game = self._res.game
        if game is None or not self._in_episode:
            return self._step_without_game()
        frame = self._step_frame(action)
        try:
            reply = self._call(game, frame, "step", self._timeout)
        except _GameFailed as err:
            self._fail(err.cause)
            return self._cut_short(err.cause)
        self._failures = 0
        try:
            obs = self._last_obs = reply["obs"]
            reward, terminated, truncated, info = (reply["reward"], reply["terminated"],
                                                   reply["truncated"], reply["info"])
        except KeyError as err:
            self._drop_game()
            raise ProtocolError(f"{self.harness_id}: the reply to step lacks {err}") from None
        self._t += 1
        if self._max_steps is not None and self._t >= self._max_steps and not terminated:
            truncated = True  # the spec's step limit holds even if the game forgets it
        return obs, reward, terminated, truncated, info

    def _step_frame(self, action: Any) -> bytes:
        if self._discrete is not None:
            try:
                key = operator.index(action)
            except TypeError:
                key = None
            if key is not None:
                frame = self._step_frames.get(key)
                if frame is None:
                    frame = self._pack({"op": "step", "action": key}, "step")
                    start, n = self._discrete
                    if start <= key < start + n:  # cache only valid actions: bounded size
                        self._step_frames[key] = frame
                return frame
        return self._pack({"op": "step", "action": action}, "step")

    def _cut_short(self, cause: str) -> StepResult:
        self._in_episode = False
        # a copy: the caller may keep (and modify) the previous step's observation
        return copy.deepcopy(self._last_obs), 0.0, False, True, {"harness_error": cause}

    def _step_without_game(self) -> StepResult:
        if self._in_episode and self._res.game is None:
            # The game died outside step() (e.g. during symbolic_state()): end the episode now.
            return self._cut_short(self._last_cause)
        if self._finalizer.alive:
            raise HarnessError(f"{self.harness_id}: step() needs a running episode; call reset() "
                               "first (also after an episode cut short by a game failure)")
        raise HarnessError(f"{self.harness_id}: the harness is closed")

    def symbolic_state(self) -> SymbolicState | None:
        game = self._res.game
        if not self._has_symbolic or game is None:
            return None
        try:
            reply = self._call(game, self._symbolic_frame, "symbolic", self._timeout)
        except _GameFailed as err:
            self._fail(err.cause)  # the next step() reports it as the episode's end
            return None
        try:
            return SymbolicState.model_validate(reply["state"])
        except (KeyError, ValidationError) as err:
            raise ProtocolError(f"{self.harness_id}: invalid symbolic state from the game: {err}") from None

    def render_text(self, obs: Any) -> str:
        """The game's own text view of `obs` when it has one (planners read this)."""
        game = self._res.game
        if not self._has_render or game is None:
            return super().render_text(obs)
        frame = self._pack({"op": "render", "obs": obs}, "render")
        try:
            reply = self._call(game, frame, "render", self._timeout)
        except _GameFailed as err:
            self._fail(err.cause)
            return super().render_text(obs)
        return str(reply.get("text", ""))

    def ping(self) -> float:
        """Round-trip time to the game process in seconds (restarting it if it is gone)."""
        game = self._ensure_game()
        t0 = time.perf_counter()
        try:
            self._call(game, self._ping_frame, "ping", self._timeout)
        except _GameFailed as err:
            self._fail(err.cause)
            raise HarnessError(f"{self.harness_id}: ping failed: {err.cause}") from None
        return time.perf_counter() - t0

    @property
    def pid(self) -> int | None:
        """The game process's id while one runs (for monitoring and tests)."""
        return self._res.game.proc.pid if self._res.game is not None else None

    @property
    def log_path(self) -> Path | None:
        """Where the running game's stdout/stderr go (removed on close)."""
        return self._res.game.log_path if self._res.game is not None else None

    def close(self) -> None:
        game = self._res.game
        self._res.game = None
        self._in_episode = False
        if game is not None:
            game.shutdown(grace_s=min(1.0, self._timeout))
        self._finalizer()
