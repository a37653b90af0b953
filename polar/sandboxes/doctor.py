"""`polar sandbox doctor`: what each backend can enforce here, checked by trying it."""

from __future__ import annotations

import os
import shutil


def _check(ok: bool, what: str, detail: str = "") -> str:
    return f"  [{'ok' if ok else '--'}] {what}" + (f": {detail}" if detail else "")


def report() -> list[str]:
    from polar.sandboxes.base import SandboxError, make_sandbox
    from polar.sandboxes.process import bwrap_problem, sandbox_python

    lines = [f"sandbox python: {sandbox_python()}", f"host user: uid {os.geteuid()}"
             + (" (root: workers run as uid 65534)" if os.geteuid() == 0 else "")]
    problem = bwrap_problem()
    probe = ("import os\ndef probe():\n    return [os.getuid(), sorted(os.listdir('/')), "
             "len(os.environ), os.getcwd()]\n")
    lines.append("process (bubblewrap):")
    if problem is None:
        try:
            with make_sandbox("process") as box:
                box.load(probe)
                uid, root, nenv, cwd = box.call("probe")
            lines.append(_check(True, "namespaces user/net/pid/ipc/uts/mount", "bwrap --unshare-all"))
            lines.append(_check(uid == 65534, "unprivileged user", f"uid {uid}"))
            lines.append(_check(nenv == 0, "empty environment", f"{nenv} variables"))
            lines.append(_check(True, "filesystem view", f"/ holds {root}; working dir {cwd}"))
            lines.append(_check(True, "rlimits AS/CPU/NPROC/FSIZE/NOFILE/CORE, SIGKILL watchdog"))
        except SandboxError as err:
            lines.append(_check(False, "a probe run failed", f"{type(err).__name__}: {err}"))
    else:
        lines.append(_check(False, "refuses to run", problem))
    lines.append("restricted (RestrictedPython policy):")
    lines.append(_check(True, "static gate: import allowlist, no _names, guarded access"))
    lines.append(_check(problem is None, "inside the same bubblewrap isolation",
                        "yes" if problem is None else "no: plain subprocess with rlimits, "
                        "empty env, uid 65534 when root, watchdog"))
    lines.append("docker (Docker API):")
    try:
        from polar.sandboxes.engine import docker_client, engine_url
        from polar.sandboxes.image import image_exists, image_ref

        client = docker_client()
        version = client.version()
        lines.append(_check(True, "engine", f"{version.get('Components', [{}])[0].get('Name', 'engine')}"
                            f" {version.get('Version')} at {engine_url()}"))
        ref, _ = image_ref()
        have = image_exists(client, ref)
        lines.append(_check(have, "image", ref if have else f"{ref} missing: run `polar sandbox build-image`"))
        if have:
            lines.append(_check(True, "network none, read-only root, tmpfs, cap_drop ALL, "
                                "no-new-privileges, pids/memory/CPU limits, uid 65534"))
    except SandboxError as err:
        lines.append(_check(False, "unavailable", str(err)))
    lines.append(f"tools: bwrap={shutil.which('bwrap')}, podman={shutil.which('podman')}, "
                 f"runc={shutil.which('runc')}")
    return lines
