# ruff: noqa
# class: hostile result
# expect: SandboxOutputError
def attack(ctx):
    return (x for x in range(10))
