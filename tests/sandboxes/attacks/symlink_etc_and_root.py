# ruff: noqa
# class: file access
# expect: contained
import os


def attack(ctx):
    found = []
    for p in ["/etc/shadow", "/etc/passwd", "/root", "/home", "/work", ctx["canary_dir"]]:
        try:
            os.symlink(p, "l" + str(len(found)))
            found.append([p, os.listdir("l" + str(len(found))) if os.path.isdir(p) else open(p).read()[:100]])
        except OSError as e:
            found.append([p, type(e).__name__])
    return found
