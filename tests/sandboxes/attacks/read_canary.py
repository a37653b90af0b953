# ruff: noqa
# class: file access
# expect: SandboxCodeError
def attack(ctx):
    return open(ctx["canary"]).read()
