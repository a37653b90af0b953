# ruff: noqa
# class: introspection escape
# expect: contained
import sys


def attack(ctx):
    f = sys._getframe()
    names = []
    while f is not None:
        names.append(sorted(k for k in f.f_globals if not k.startswith("__"))[:5])
        f = f.f_back
    return names
