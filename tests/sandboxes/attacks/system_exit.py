# ruff: noqa
# class: exit
# expect: SandboxCodeError
import sys


def attack(ctx):
    sys.exit(0)
