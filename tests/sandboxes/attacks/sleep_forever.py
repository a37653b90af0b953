# ruff: noqa
# class: resource exhaustion
# expect: SandboxTimeout
import time


def attack(ctx):
    time.sleep(3600)
