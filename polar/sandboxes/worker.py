"""The worker that runs inside every sandbox: loads the policy code and answers calls.

It is started by the host as `python3 -I -S -B worker.py CONFIG_JSON` and must run on a bare
Python standard library (the container image has no msgpack), so it carries its own small
msgpack codec for the subset the protocol uses: nil, bool, int, float, str, bin, array and
map. It speaks `polar/wire.py` frames (4-byte big-endian length + msgpack) over fds 0/1, or
over the Unix socket named by the config's `connect` (the docker backend);
the host decodes with the real msgpack, so the two must stay byte-compatible (a test
round-trips every type through both).

Messages (lists, for speed):
  host -> worker  ["load", source]  |  ["call", name, args]  |  ["ping"]
  worker -> host  [0, value]        |  [1, kind, type_name, message]
`kind` is one of: code (the code raised), violation (the restricted policy refused it),
memory, output (the result is not plain data or is too large), syntax.

This file imports nothing outside the standard library and nothing from Polar.
"""

from __future__ import annotations

import contextlib
import operator
import os
import select
import struct
import sys
import time

_MSG_LIMIT = 2000  # characters of an exception message sent back


class OutputTooLarge(Exception):
    pass


class NotPlainData(Exception):
    pass


# ---------------------------------------------------------------- msgpack subset (encoder)

_pack_d = struct.Struct(">Bd").pack
_pack_H = struct.Struct(">H").pack
_pack_I = struct.Struct(">I").pack


def encode(obj: object, limit: int) -> bytes:
    """Encode plain data only. Exact types are required: a `str` or `int` subclass made by
    the code could run code on the host when the host compares or prints it, so it is
    refused here, inside the sandbox."""
    out = bytearray()
    _enc(obj, 0, out, limit)
    if len(out) > limit:
        raise OutputTooLarge(f"the result is larger than the output limit of {limit} bytes")
    return bytes(out)


def _container_header(out: bytearray, n: int, depth: int, limit: int, fix: int, h16: bytes,
                      h32: bytes) -> None:
    """An array or map header (msgpack fix/16/32 forms), with the depth and size limits."""
    if depth >= 64 and n:
        raise NotPlainData("the result is nested more than 64 levels deep")
    if n < 16:
        out.append(fix | n)
    elif n < 65536:
        out += h16 + _pack_H(n)
    else:
        out += h32 + _pack_I(n)
    if len(out) > limit:
        raise OutputTooLarge(f"the result is larger than the output limit of {limit} bytes")


def _enc(x: object, depth: int, out: bytearray, limit: int) -> None:  # noqa: C901 - flat dispatch
    # One module-level function appending to one buffer (no closures built per call); the
    # limit is checked after every container element and string, so a huge result stops early.
    t = type(x)
    if t is float:
        out += _pack_d(0xCB, x)
    elif t is int:
        out += _enc_int(x)  # type: ignore[arg-type]
    elif x is None:
        out.append(0xC0)
    elif x is True:
        out.append(0xC3)
    elif x is False:
        out.append(0xC2)
    elif t is str:
        b = x.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
        n = len(b)
        if n < 32:
            out.append(0xA0 | n)
        elif n < 256:
            out += b"\xd9" + bytes((n,))
        elif n < 65536:
            out += b"\xda" + _pack_H(n)
        else:
            out += b"\xdb" + _pack_I(n)
        out += b
        if len(out) > limit:
            raise OutputTooLarge(f"the result is larger than the output limit of {limit} bytes")
    elif t is list or t is tuple:
        _container_header(out, len(x), depth, limit, 0x90, b"\xdc", b"\xdd")  # type: ignore[arg-type]
        for v in x:  # type: ignore[attr-defined]
            _enc(v, depth + 1, out, limit)
            if len(out) > limit:
                raise OutputTooLarge(f"the result is larger than the output limit of {limit} bytes")
    elif t is dict:
        _container_header(out, len(x), depth, limit, 0x80, b"\xde", b"\xdf")  # type: ignore[arg-type]
        for k, v in dict.items(x):  # type: ignore[arg-type]
            if type(k) is not str:
                raise NotPlainData("dictionary keys in the result must be strings")
            _enc(k, depth + 1, out, limit)
            _enc(v, depth + 1, out, limit)
            if len(out) > limit:
                raise OutputTooLarge(f"the result is larger than the output limit of {limit} bytes")
    elif t is bytes:
        out += b"\xc6" + _pack_I(len(x)) + x  # type: ignore[arg-type,operator]
        if len(out) > limit:
            raise OutputTooLarge(f"the result is larger than the output limit of {limit} bytes")
    else:
        raise NotPlainData(
            f"the result contains a value of type {t.__name__!s:.60}; only None, bool, "
            "int, float, str, list and dict (with str keys) can leave the sandbox"
        )


def _enc_int(x: int) -> bytes:
    if 0 <= x < 128:
        return bytes((x,))
    if -32 <= x < 0:
        return struct.pack(">b", x)
    if 0 <= x < 2**64:
        return struct.pack(">BQ", 0xCF, x)
    if -(2**63) <= x < 0:
        return struct.pack(">Bq", 0xD3, x)
    raise NotPlainData("an integer in the result does not fit in 64 bits")


# ---------------------------------------------------------------- msgpack subset (decoder)


def decode(b: bytes) -> object:
    value, pos = _dec(b, 0)
    if pos != len(b):
        raise ValueError("trailing bytes in frame")
    return value


def _dec(b: bytes, i: int) -> tuple[object, int]:  # noqa: C901 - one flat dispatch is fastest
    # Tests ordered by how often each type byte occurs in requests (observations are mostly
    # small ints, short strings, lists and float64s): this runs once per value per call.
    c = b[i]
    i += 1
    if c < 0x80:
        return c, i
    if c >= 0xE0:
        return c - 256, i
    if c == 0xCB:
        return _unpack_d(b, i)[0], i + 8
    if 0xA0 <= c <= 0xBF:
        n = c & 0x1F
        return b[i : i + n].decode("utf-8", "surrogatepass"), i + n
    if 0x90 <= c <= 0x9F:
        return _dec_list(b, i, c & 0x0F)
    if 0x80 <= c <= 0x8F:
        return _dec_map(b, i, c & 0x0F)
    if c == 0xC0:
        return None, i
    if c == 0xC2:
        return False, i
    if c == 0xC3:
        return True, i
    if c == 0xCA:
        return struct.unpack_from(">f", b, i)[0], i + 4
    if c in _INTS:
        fmt, size = _INTS[c]
        return struct.unpack_from(fmt, b, i)[0], i + size
    if c in _STRS:
        fmt, size = _STRS[c]
        n = struct.unpack_from(fmt, b, i)[0]
        i += size
        return b[i : i + n].decode("utf-8", "surrogatepass"), i + n
    if c in _BINS:
        fmt, size = _BINS[c]
        n = struct.unpack_from(fmt, b, i)[0]
        i += size
        return bytes(b[i : i + n]), i + n
    if c == 0xDC:
        return _dec_list(b, i + 2, struct.unpack_from(">H", b, i)[0])
    if c == 0xDD:
        return _dec_list(b, i + 4, struct.unpack_from(">I", b, i)[0])
    if c == 0xDE:
        return _dec_map(b, i + 2, struct.unpack_from(">H", b, i)[0])
    if c == 0xDF:
        return _dec_map(b, i + 4, struct.unpack_from(">I", b, i)[0])
    raise ValueError(f"unsupported msgpack type byte 0x{c:02x}")


_unpack_d = struct.Struct(">d").unpack_from
_INTS = {
    0xCC: (">B", 1), 0xCD: (">H", 2), 0xCE: (">I", 4), 0xCF: (">Q", 8),
    0xD0: (">b", 1), 0xD1: (">h", 2), 0xD2: (">i", 4), 0xD3: (">q", 8),
}
_STRS = {0xD9: (">B", 1), 0xDA: (">H", 2), 0xDB: (">I", 4)}
_BINS = {0xC4: (">B", 1), 0xC5: (">H", 2), 0xC6: (">I", 4)}
# The usual observation is a flat list of float64s: 9 bytes each (0xcb + big-endian double).
# When every 9th byte is 0xcb, one struct call decodes the whole list in C.
_FLOAT_RUNS: dict[int, struct.Struct] = {}


def _dec_list(b: bytes, i: int, n: int) -> tuple[list, int]:
    if n > 1 and b[i : i + 9 * n : 9] == b"\xcb" * n:
        st = _FLOAT_RUNS.get(n)
        if st is None:
            st = struct.Struct(">" + "xd" * n)
            if len(_FLOAT_RUNS) < 256:
                _FLOAT_RUNS[n] = st
        return list(st.unpack_from(b, i)), i + 9 * n
    out = []
    append = out.append
    for _ in range(n):
        v, i = _dec(b, i)
        append(v)
    return out, i


def _dec_map(b: bytes, i: int, n: int) -> tuple[dict, int]:
    out = {}
    for _ in range(n):
        k, i = _dec(b, i)
        v, i = _dec(b, i)
        out[k] = v
    return out, i


# ---------------------------------------------------------------- limits and channel


def apply_rlimits(cfg: dict) -> None:
    """Hard limits the kernel enforces, set before any untrusted code exists.

    CPU: the soft limit sends SIGXCPU, the hard limit one second later SIGKILL (the code may
    ignore SIGXCPU). NPROC 0 forbids any new process or thread."""
    import resource

    def lim(res: int, soft: int, hard: int | None = None) -> None:
        # A failure means e.g. a container already set a lower hard limit: the lower one holds.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(res, (soft, soft if hard is None else hard))

    if cfg.get("memory_bytes"):
        lim(resource.RLIMIT_AS, cfg["memory_bytes"])
    if cfg.get("cpu_s"):
        lim(resource.RLIMIT_CPU, cfg["cpu_s"], cfg["cpu_s"] + 1)
    lim(resource.RLIMIT_NPROC, cfg.get("nproc", 0))
    lim(resource.RLIMIT_FSIZE, cfg.get("file_bytes", 1 << 20))
    lim(resource.RLIMIT_NOFILE, cfg.get("nofile", 32))
    lim(resource.RLIMIT_CORE, 0)


_MAX_BACKOFF = 1024


class Channel:
    """Frames over the protocol fds: the stdlib-only twin of `polar.wire.FramedChannel`, kept
    on purpose (this file runs inside the sandbox on a bare standard library, and must not
    import Polar or msgpack); tests/sandboxes/test_worker_channel.py holds the two to the same
    frames. No size limit on incoming frames: the host is trusted, and RLIMIT_AS bounds it.

    After each reply the host usually sends its next request
    within microseconds, while waking a process asleep in read() costs 70-100 us on an idle
    machine: so `_fill` first busy-polls the non-blocking fd for up to `spin_s` (yielding the
    CPU between polls, as the host may need it), then sleeps in select(). The spin backs off
    as `polar.wire.FramedChannel`'s does: misses double the number of waits that skip it, hits
    halve it, so a mostly-missing spin (a slow host, a busy machine) stays mostly off."""

    def __init__(self, rfd: int, wfd: int, spin_s: float = 0.0) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.buf = bytearray()
        self.spin_s = spin_s
        self._skip_spins = 0  # waits left before the next spin attempt
        self._backoff = 1
        if spin_s > 0:  # without a spin the fd stays blocking and _read is one plain read()
            os.set_blocking(rfd, False)

    def recv(self) -> object:
        return decode(self.recv_payload())

    def recv_payload(self) -> bytes:
        buf = self.buf
        while len(buf) < 4:
            self._fill()
        n = _HEADER.unpack_from(buf)[0] + 4
        while len(buf) < n:
            self._fill()
        payload = bytes(buf[4:n])
        del buf[:n]
        return payload

    def _fill(self) -> None:
        chunk = self._read()
        if not chunk:
            raise EOFError
        self.buf += chunk

    def _read(self) -> bytes:
        # 64 KiB, not more: a read buffer over glibc's mmap threshold (128 KiB) costs an
        # mmap + munmap and fresh page faults on every call (~10 us of system time each).
        rfd = self.rfd
        try:
            return os.read(rfd, 1 << 16)
        except BlockingIOError:
            pass
        if self.spin_s > 0:
            if self._skip_spins:
                self._skip_spins -= 1
            else:
                spin_end = _now() + self.spin_s
                while _now() < spin_end:
                    _yield_cpu()
                    try:
                        chunk = os.read(rfd, 1 << 16)
                    except BlockingIOError:
                        continue
                    # Late (the yield handed the CPU to another process for a time slice):
                    # that wait is what sleeping avoids, so it counts as a miss.
                    self._spun(_now() <= spin_end)
                    return chunk
                self._spun(False)
        while True:
            _select([rfd], [], [])
            try:
                return os.read(rfd, 1 << 16)
            except BlockingIOError:  # spurious wake-up
                continue

    def _spun(self, hit: bool) -> None:
        if hit:
            self._backoff = max(self._backoff // 2, 1)
        else:
            self._skip_spins = self._backoff
            self._backoff = min(self._backoff * 2, _MAX_BACKOFF)

    def send_raw(self, body: bytes) -> None:
        data = _HEADER.pack(len(body)) + body
        while data:
            try:
                data = data[os.write(self.wfd, data) :]
            except BlockingIOError:  # only if fds 0 and 1 share one (now non-blocking) file
                _select([], [self.wfd], [])


_HEADER = struct.Struct(">I")
_now = time.perf_counter
_yield_cpu = os.sched_yield
_select = select.select


# ---------------------------------------------------------------- the two execution modes


def plain_loader(source: str, namespace: dict) -> None:
    exec(compile(source, "<policy>", "exec"), namespace)


def restricted_loader(libdir: str | None):
    """RestrictedPython with Polar's policy. A static gate for clear early rejections;
    the isolation itself is the process around this worker."""
    if libdir:
        sys.path.insert(0, libdir)
    from RestrictedPython import (
        compile_restricted,
        limited_builtins,
        safe_builtins,
        utility_builtins,
    )
    from RestrictedPython.Eval import default_guarded_getiter
    from RestrictedPython.Guards import (
        _FORMATTER_UNSAFE_METHODS,
        full_write_guard,
        guarded_iter_unpack_sequence,
        guarded_unpack_sequence,
        safer_getattr,
        safer_getattr_raise,
    )
    from RestrictedPython.transformer import INSPECT_ATTRIBUTES

    allowed = frozenset({"math", "itertools", "functools", "collections", "heapq", "random"})
    import_cache = {name: __import__(name) for name in allowed}

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level != 0 or name not in allowed:
            raise ImportError(
                f"import of {name!s:.80} is not allowed in the restricted sandbox "
                f"(allowed: {', '.join(sorted(allowed))})"
            )
        return import_cache[name]

    # The guards below are bound once per worker and keep RestrictedPython's meaning exactly;
    # they only skip work that cannot change the outcome (they run on every item access,
    # attribute access, write and `+=` of the code, so they are the restricted mode's cost).

    # safer_getattr refuses: a non-str name, names starting with "_", the frame/traceback/code
    # names, format/format_map on str, and Formatter/string.Formatter methods. For any other
    # name its answer does not depend on the object, so a plain getattr is the same thing.
    name_checked = frozenset({"format", "format_map", "Formatter"}) | _FORMATTER_UNSAFE_METHODS \
        | INSPECT_ATTRIBUTES

    def guarded_getattr(obj, name, *default):
        if len(default) > 1:
            raise TypeError("getattr expected at most 3 arguments")
        if type(name) is str and name[:1] != "_" and name not in name_checked:
            return getattr(obj, name, *default)
        return safer_getattr(obj, name, *default) if default else safer_getattr_raise(obj, name)

    def guarded_write(ob):
        # full_write_guard passes dict and list through and wraps everything else.
        t = type(ob)
        if t is dict or t is list:
            return ob
        return full_write_guard(ob)

    # `x op= y` becomes `x = x op y` (never in place), as before: one table built once
    # instead of a dict of twelve lambdas per `+=`.
    inplace_ops = {"+=": operator.add, "-=": operator.sub, "*=": operator.mul,
                   "/=": operator.truediv, "//=": operator.floordiv, "%=": operator.mod,
                   "**=": operator.pow, "&=": operator.and_, "|=": operator.or_,
                   "^=": operator.xor, "<<=": operator.lshift, ">>=": operator.rshift}

    def inplacevar(op, x, y):
        fn = inplace_ops.get(op)
        if fn is None:
            raise SyntaxError(f"operator {op} is not allowed")
        return fn(x, y)

    builtins = dict(safe_builtins)
    builtins.update(limited_builtins)
    builtins.update(utility_builtins)
    for name in ("dict", "list", "enumerate", "max", "min", "sum", "any", "all", "map", "filter",
                 "reversed", "iter", "next"):
        builtins[name] = __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
    builtins["__import__"] = guarded_import
    builtins["getattr"] = guarded_getattr
    for banned in ("open", "exec", "eval", "compile", "globals", "vars", "locals", "input",
                   "breakpoint", "help", "memoryview", "type", "object", "super", "delattr",
                   "setattr", "string", "__build_class__"):
        builtins.pop(banned, None)
    base_globals = {
        "__builtins__": builtins,
        "_getattr_": guarded_getattr,
        "_getitem_": operator.getitem,  # = default_guarded_getitem (`ob[index]`), in C
        "_getiter_": default_guarded_getiter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": guarded_write,
        "_inplacevar_": inplacevar,
        "_print_": _NullPrint,
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
        "__name__": "policy",
        "__metaclass__": type,
    }

    def load(source: str, namespace: dict) -> None:
        try:
            code = compile_restricted(source, "<policy>", "exec")
        except SyntaxError as err:
            raise PolicyViolation(str(err)) from None
        namespace.update(base_globals)
        exec(code, namespace)

    return load


class _NullPrint:
    """`print` in restricted code goes nowhere (the output channel carries frames only)."""

    def __init__(self, _getattr_=None) -> None:
        pass

    def _call_print(self, *args, **kwargs) -> None:
        pass

    def __call__(self) -> str:
        return ""


class PolicyViolation(Exception):
    pass


# ---------------------------------------------------------------- main loop


_OK_SMALL_INT = [bytes((0x92, 0x00, i)) for i in range(128)]  # msgpack of [0, i]


def _short(text: object) -> str:
    s = text if type(text) is str else "(unprintable)"
    return s if len(s) <= _MSG_LIMIT else s[:_MSG_LIMIT] + "... (truncated)"


def _error_reply(kind: str, err: BaseException, limit: int) -> bytes:
    try:
        type_name = type(err).__name__
        message = str(err)
    except BaseException:  # a hostile __str__ may raise anything
        type_name, message = "Exception", "(unprintable exception)"
    return encode([1, kind, _short(type_name)[:100], _short(message)], limit)


def serve(cfg: dict) -> None:
    # The protocol runs over fds 0/1, or (the docker backend) over a Unix socket the host
    # listens on. Keep private copies of its fds and point 0/1/2 at /dev/null, so print() or
    # a stray write by the code cannot corrupt the frame stream.
    if cfg.get("connect"):
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(cfg["connect"])
        rfd = wfd = sock.detach()
    else:
        rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdout = sys.stderr = None  # type: ignore[assignment]
    os.environ.clear()  # the host starts us with none; drop what bwrap/Python add (PWD, LC_CTYPE)
    chan = Channel(rfd, wfd, float(cfg.get("spin_us") or 0) * 1e-6)
    limit = int(cfg.get("output_bytes", 65536))
    loader = restricted_loader(cfg.get("libdir")) if cfg.get("mode") == "restricted" else plain_loader
    apply_rlimits(cfg)
    namespace: dict = {}
    chan.send_raw(encode([0, "ready"], limit))
    while True:
        try:
            msg = chan.recv()
        except EOFError:
            return
        try:
            op = msg[0]  # type: ignore[index]
            if op == "call":
                fn = namespace.get(msg[1])  # type: ignore[index]
                if not callable(fn):
                    raise NameError(f"the code defines no function named {msg[1]!s:.80}")  # type: ignore[index]
                value = fn(*msg[2])  # type: ignore[index]
                # Fast path for the common discrete action: skip the general encoder.
                if type(value) is int and 0 <= value < 128:
                    body = _OK_SMALL_INT[value]
                else:
                    body = encode([0, value], limit)
            elif op == "load":
                namespace = {"__name__": "policy"}
                loader(msg[1], namespace)  # type: ignore[index]
                names = [k for k, v in namespace.items() if callable(v) and not k.startswith("_")
                         and type(k) is str]
                body = encode([0, sorted(names)], limit)
            elif op == "ping":
                body = encode([0, "pong"], limit)
            else:
                raise ValueError(f"unknown operation {op!r}")
        except MemoryError as err:
            body = _error_reply("memory", err, limit)
        except SystemError as err:
            # CPython 3.11 raises this bare SystemError when it cannot allocate another chunk
            # of its frame stack (deep recursion hitting RLIMIT_AS); 3.12 says MemoryError.
            kind = "memory" if str(err) == "error return without exception set" else "code"
            body = _error_reply(kind, err, limit)
        except OutputTooLarge as err:
            body = _error_reply("output", err, limit)
        except NotPlainData as err:
            body = _error_reply("output", err, limit)
        except PolicyViolation as err:
            body = _error_reply("violation", err, limit)
        except SyntaxError as err:
            body = _error_reply("syntax", err, limit)
        except OSError as err:
            if err.errno == 27:  # EFBIG: RLIMIT_FSIZE (Python ignores SIGXFSZ, so no kill)
                err = PolicyViolation(f"the code wrote a file larger than the limit of "
                                      f"{cfg.get('file_bytes', 0)} bytes (limits.file_mb)")
                body = _error_reply("violation", err, limit)
            else:
                body = _error_reply("code", err, limit)
        except BaseException as err:  # SystemExit and KeyboardInterrupt too: they end the call
            kind = "violation" if _is_policy_error(err) else "code"
            try:
                body = _error_reply(kind, err, limit)
            except BaseException:
                body = encode([1, "code", "Exception", "(unprintable exception)"], limit)
        chan.send_raw(body)


def _is_policy_error(err: BaseException) -> bool:
    """Refusals by the restricted policy's guards at run time (imports, attributes, writes)."""
    if type(err) not in (ImportError, AttributeError, TypeError, NameError, NotImplementedError):
        return False
    text = str(err)
    return any(m in text for m in ("not allowed", "invalid attribute name", "restricted name",
                                   "is not safe", "is not allowed"))


if __name__ == "__main__":
    import json

    serve(json.loads(sys.argv[1]))
