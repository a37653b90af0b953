# ruff: noqa
# class: resource exhaustion
# expect: SandboxTimeout
def attack(ctx):
    while True:
        pass
