"""The game side of the connector: `serve(MyGame)` runs the request loop for a wrapped game.

A wrapped game is any class (or factory) whose instances have:

    observation_space, action_space      gymnasium spaces
    reset(seed, options) -> (obs, info)
    step(action) -> (obs, reward, terminated, truncated, info)

and optionally `action_meanings`, `max_steps`, `reward_range`, `reports_success`,
`reward_marks_success`, `done_action`, `predicate_vocabulary`, `description`,
`symbolic() -> dict` (a SymbolicState as plain data), `render_text(obs) -> str` (the observation as a planner should read it) and `close()`. The harness's `kwargs` arrive with the first (`spec`) request and are passed
to the factory, so one script serves every configuration of the game.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from polar.errors import ProtocolError
from polar.harnesses.connector.protocol import (
    ENV_MAX_FRAME,
    ENV_SOCKET,
    ENV_SPIN_US,
    ENV_TRANSPORT,
    OPS,
    PROTOCOL_VERSION,
)
from polar.harnesses.spaces import space_to_spec
from polar.wire import DEFAULT_MAX_FRAME, ChannelClosed, FramedChannel, FrameTooLarge

_OPTIONAL_SPEC_FIELDS = ("action_meanings", "max_steps", "reward_range", "reports_success",
                         "reward_marks_success", "done_action", "predicate_vocabulary", "description")


def _error(text: str) -> dict[str, Any]:
    return {"ok": False, "error": text}


def _exc_text(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _tail(text: str, lines: int = 12, chars: int = 1500) -> str:
    """The innermost part of a traceback: where the game raised, which is what helps."""
    return "\n".join(text.rstrip().splitlines()[-lines:])[-chars:]


class _Session:
    """Answers requests for one connection; builds the game on the first `spec` request."""

    def __init__(self, game: Any) -> None:
        # A class or a function is a factory called with the harness's kwargs; anything else
        # with reset/step is a ready game instance.
        self._factory: Callable[..., Any] | None = None
        self.game: Any = None
        if isinstance(game, type) or not (hasattr(game, "reset") and hasattr(game, "step")):
            if not callable(game):
                raise TypeError("serve() needs a game class/factory or an object with reset/step")
            self._factory = game
        else:
            self.game = game
        self._contains: Callable[[Any], bool] | None = None
        self._space_text = ""

    def spec(self, req: dict[str, Any]) -> dict[str, Any]:
        kwargs = req.get("kwargs") or {}
        if not isinstance(kwargs, dict):
            return _error(f"spec: kwargs must be a map, got {type(kwargs).__name__}")
        if self._factory is not None:
            if self.game is not None and hasattr(self.game, "close"):
                self.game.close()
            self.game = self._factory(**kwargs)
        elif kwargs:
            return _error(f"spec: this game takes no kwargs, got {sorted(kwargs)}")
        g = self.game
        reply: dict[str, Any] = {
            "ok": True,
            "protocol": PROTOCOL_VERSION,
            "observation_space": space_to_spec(g.observation_space).model_dump(exclude_none=True),
            "action_space": space_to_spec(g.action_space).model_dump(exclude_none=True),
            "has_symbolic": callable(getattr(g, "symbolic", None)),
            "has_render": callable(getattr(g, "render_text", None)),
        }
        for name in _OPTIONAL_SPEC_FIELDS:
            value = getattr(g, name, None)
            if value is not None:
                reply[name] = list(value) if isinstance(value, tuple) else value
        self._contains = _fast_contains(g.action_space)
        self._space_text = str(g.action_space)
        return reply

    def handle(self, req: Any) -> dict[str, Any]:
        if not isinstance(req, dict):
            return _error(f"a request must be a map with 'op', got {type(req).__name__}")
        op = req.get("op")
        if op == "step":  # the hot path first
            if self.game is None or self._contains is None:
                return _error("step before spec: the first request must be 'spec'")
            action = req.get("action")
            if not self._contains(action):
                return _error(f"step: action {action!r} is not in the action space {self._space_text}")
            obs, reward, terminated, truncated, info = self.game.step(action)
            return {"ok": True, "obs": obs, "reward": float(reward), "terminated": bool(terminated),
                    "truncated": bool(truncated), "info": info or {}}
        if op == "spec":
            return self.spec(req)
        if op == "ping":
            return {"ok": True}
        if op not in OPS:
            return _error(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
        if self.game is None:
            return _error(f"{op} before spec: the first request must be 'spec'")
        if op == "reset":
            obs, info = self.game.reset(seed=req.get("seed"), options=req.get("options"))
            return {"ok": True, "obs": obs, "info": info or {}}
        if op == "symbolic":
            fn = getattr(self.game, "symbolic", None)
            if not callable(fn):
                return _error("symbolic: this game has no symbolic state")
            state = fn()
            if hasattr(state, "model_dump"):
                state = state.model_dump()
            return {"ok": True, "state": state}
        if op == "render":
            fn = getattr(self.game, "render_text", None)
            if not callable(fn):
                return _error("render: this game has no text rendering")
            return {"ok": True, "text": str(fn(req.get("obs")))}
        if op == "close":
            if hasattr(self.game, "close"):
                self.game.close()
            return {"ok": True}
        raise AssertionError(f"op {op!r} listed in OPS but not handled")


def _fast_contains(space: gym.Space) -> Callable[[Any], bool]:
    """`space.contains`, with a shortcut for Discrete (its own check costs microseconds)."""
    if isinstance(space, gym.spaces.Discrete):
        lo, hi = int(space.start), int(space.start + space.n)
        return lambda a: type(a) is int and lo <= a < hi
    return space.contains


def _is_pipe_or_socket(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _open_stdio() -> tuple[int, int]:
    """Take fds 0/1 for the protocol and point the game's own stdin/stdout elsewhere.

    Anything the game prints (Python or C level) then lands on stderr instead of corrupting
    frames, and a stray input() reads EOF instead of eating requests.
    """
    for fd in (0, 1):
        if not _is_pipe_or_socket(fd):
            raise SystemExit("serve(): stdin/stdout must be pipes (this script is started by "
                             "a Polar connector harness, not run by hand)")
    sys.stdout.flush()
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return in_fd, out_fd


def serve(
    game: Any,
    *,
    transport: str | None = None,
    socket_path: str | None = None,
    max_frame_bytes: int | None = None,
    spin_us: float | None = None,
) -> None:
    """Serve `game` (a class/factory called with the harness's kwargs, or an instance).

    Arguments default to what the harness passes in the environment (POLAR_CONNECTOR_*), so a
    game script just calls `serve(MyGame)`. Returns when the harness sends `close` or goes away.
    """
    transport = transport or os.environ.get(ENV_TRANSPORT, "stdio")
    max_frame = max_frame_bytes or int(os.environ.get(ENV_MAX_FRAME, DEFAULT_MAX_FRAME))
    spin = (spin_us if spin_us is not None else float(os.environ.get(ENV_SPIN_US, "0"))) * 1e-6
    sock: socket.socket | None = None
    if transport == "stdio":
        in_fd, out_fd = _open_stdio()
    elif transport == "unix":
        path = socket_path or os.environ.get(ENV_SOCKET)
        if not path:
            raise SystemExit(f"serve(): transport 'unix' needs a socket path ({ENV_SOCKET})")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        in_fd = out_fd = sock.fileno()
    else:
        raise SystemExit(f"serve(): unknown transport {transport!r}; expected 'stdio' or 'unix'")

    channel = FramedChannel(in_fd, out_fd, max_frame, spin)
    session = _Session(game)
    try:
        _loop(channel, session)
    finally:
        if sock is not None:
            sock.close()


def _loop(channel: FramedChannel, session: _Session) -> None:
    while True:
        try:
            req = channel.recv()
        except ChannelClosed:
            return  # the harness went away: exit quietly, never linger as an orphan
        except ProtocolError as err:
            # A malformed body leaves the stream aligned (its length was valid), so answer and
            # carry on; an oversized header does not (the rest of that frame is still coming),
            # so answer and exit.
            desynced = isinstance(err, FrameTooLarge)
            _send_reply(channel, _error(f"bad request frame: {err}"))
            if desynced:
                print(f"serve(): {err}; closing the connection", file=sys.stderr)
                return
            continue
        try:
            reply = session.handle(req)
        except Exception as err:  # the game's own bug: report it (with where), keep serving
            tb = traceback.format_exc()
            sys.stderr.write(tb)
            op = req.get("op") if isinstance(req, dict) else None
            reply = {**_error(f"{op}: {_exc_text(err)}"), "traceback": _tail(tb)}
        if not _send_reply(channel, reply):
            return
        if isinstance(req, dict) and req.get("op") == "close" and reply.get("ok"):
            return


def _send_reply(channel: FramedChannel, reply: dict[str, Any]) -> bool:
    try:
        frame = channel.encode_frame(reply)
    except ProtocolError as err:  # unencodable or oversized observation: tell the harness
        frame = channel.encode_frame(_error(f"cannot send the reply: {err}"))
    try:
        channel.send_frame(frame)
    except ChannelClosed:
        return False
    return True
