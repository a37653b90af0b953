# ruff: noqa
# class: secrets
# expect: contained
import os


def attack(ctx):
    out = []
    for pid in ["1", str(os.getppid()), "self"]:
        try:
            out.append(open("/proc/%s/environ" % pid, "rb").read().decode(errors="replace"))
        except OSError as e:
            out.append(type(e).__name__)
    return out
