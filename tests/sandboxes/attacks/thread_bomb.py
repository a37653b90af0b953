# ruff: noqa
# class: resource exhaustion
# expect: SandboxCodeError
import threading


def attack(ctx):
    while True:
        threading.Thread(target=lambda: [0] * 10 ** 9).start()
