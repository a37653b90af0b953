# ruff: noqa
# class: resource exhaustion
# expect: SandboxOutputError
def attack(ctx):
    v = []
    for _ in range(100000):
        v = [v]
    return v
