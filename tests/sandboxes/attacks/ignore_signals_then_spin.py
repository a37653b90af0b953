# ruff: noqa
# class: signals
# expect: SandboxTimeout
import signal


def attack(ctx):
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU, signal.SIGALRM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    while True:
        pass
