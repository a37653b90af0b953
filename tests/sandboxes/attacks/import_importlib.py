# ruff: noqa
# class: import escape
# expect: SandboxCodeError
import importlib


def attack(ctx):
    b = importlib.import_module("builtins")
    return b.open(ctx["canary"]).read()
