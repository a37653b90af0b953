# ruff: noqa
# class: import escape
# expect: SandboxCodeError
import subprocess


def attack(ctx):
    return subprocess.run(["cat", ctx["canary"]], capture_output=True).stdout.decode()
