# ruff: noqa
# class: file access
# expect: contained
import os


def attack(ctx):
    out = []
    for fd in range(0, 64):
        try:
            out.append([fd, os.readlink("/proc/self/fd/%d" % fd)])
        except OSError:
            pass
    return out
