# ruff: noqa
# class: file access
# expect: SandboxCodeError
import os


def attack(ctx):
    os.symlink(ctx["canary"], "link")
    return open("link").read()
