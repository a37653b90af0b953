"""The `restricted` backend: RestrictedPython with Polar's policy, in a hard-limited worker.

The policy (in `worker.restricted_loader`): imports only from math, itertools, functools,
collections, heapq and random; no attribute or name starting with `_`; no frame/traceback/
code attributes; no str.format; no open, exec, eval, compile, globals, vars, locals, type,
setattr/delattr or class definitions; iteration, item access and writes go through guards.

The static gate gives clear early refusals (SandboxViolation), not isolation: the worker
runs in the same bubblewrap jail as the `process` backend when bubblewrap works here, and
otherwise (said by `polar sandbox doctor`) in a plain subprocess with an empty environment,
rlimits, an unprivileged user and the wall-clock watchdog.
"""

from __future__ import annotations

from polar.sandboxes.process import ProcessSandbox


class RestrictedSandbox(ProcessSandbox):
    backend = "restricted"
    mode = "restricted"
    require_isolation = False
