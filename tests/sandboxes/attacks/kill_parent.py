# ruff: noqa
# class: signals
# expect: contained
import os
import signal


def attack(ctx):
    os.kill(os.getppid(), signal.SIGKILL)
    return "sent"
