# ruff: noqa
# class: resource exhaustion
# expect: SandboxOutputError
def attack(ctx):
    return "x" * (20 * 1024 * 1024)
