# ruff: noqa
# class: file access
# expect: contained|SandboxTimeout
import os


def attack(ctx):
    hits = []
    for root, dirs, files in os.walk("/"):
        if root.startswith(("/proc", "/sys", "/usr", "/dev")):
            dirs[:] = []
            continue
        for f in files:
            p = os.path.join(root, f)
            try:
                with open(p, "rb") as fh:
                    if ctx["secret_hint"].encode() in fh.read(1 << 16):
                        hits.append(p)
            except OSError:
                pass
    return hits
