# ruff: noqa
# class: signals
# expect: contained
import os
import signal


def attack(ctx):
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError as e:
        return type(e).__name__
    return "sent"
