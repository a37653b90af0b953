# ruff: noqa
# class: import escape
# expect: SandboxCodeError
import posix


def attack(ctx):
    fd = posix.open(ctx["canary"], posix.O_RDONLY)
    return posix.read(fd, 1000).decode()
