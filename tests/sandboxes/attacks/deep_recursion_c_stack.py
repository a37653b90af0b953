# ruff: noqa
# class: resource exhaustion
# expect: SandboxCrash|SandboxTimeout|SandboxMemoryError
import sys


def attack(ctx):
    sys.setrecursionlimit(10 ** 8)
    def down(n):
        return down(n + 1) + 1
    return down(0)
