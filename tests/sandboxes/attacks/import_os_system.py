# ruff: noqa
# class: import escape
# expect: contained
import os


def attack(ctx):
    os.system("cat " + ctx["canary"] + " > /tmp/out; echo pwned >> " + ctx["canary"])
    return open("/tmp/out").read() if os.path.exists("/tmp/out") else "no output"
