# ruff: noqa
# class: secrets
# expect: contained
import glob
import os


def attack(ctx):
    paths = glob.glob("/root/.*") + glob.glob("/home/*/.*") + glob.glob("/work/*")
    return [[p, open(p).read()[:200] if os.path.isfile(p) else "dir"] for p in paths[:20]]
