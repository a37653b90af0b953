# ruff: noqa
# class: import escape
# expect: contained|SandboxCrash
import builtins


def attack(ctx):
    builtins.len = lambda x: 0          # tamper with the worker's own builtins
    builtins.isinstance = lambda *a: True
    return open(ctx["canary"]).read()
