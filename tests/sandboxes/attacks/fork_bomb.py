# ruff: noqa
# class: resource exhaustion
# expect: SandboxCodeError
import os


def attack(ctx):
    while True:
        os.fork()
