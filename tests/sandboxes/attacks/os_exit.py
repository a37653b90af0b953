# ruff: noqa
# class: exit
# expect: SandboxCrash
import os


def attack(ctx):
    os._exit(0)
