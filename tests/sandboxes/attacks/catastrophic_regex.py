# ruff: noqa
# class: C-level loop
# expect: SandboxTimeout
import re


def attack(ctx):
    return bool(re.match(r"(a+)+$", "a" * 64 + "b"))
