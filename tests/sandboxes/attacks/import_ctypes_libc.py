# ruff: noqa
# class: import escape
# expect: SandboxCodeError
import ctypes


def attack(ctx):
    libc = ctypes.CDLL(None)
    libc.system(("echo pwned > " + ctx["canary"]).encode())
    return open(ctx["canary"]).read()
