# ruff: noqa
# class: C-level loop
# expect: SandboxTimeout
def attack(ctx):
    return 10 ** 10 ** 8 % 7
