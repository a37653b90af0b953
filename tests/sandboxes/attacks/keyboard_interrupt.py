# ruff: noqa
# class: exit
# expect: SandboxCodeError
def attack(ctx):
    raise KeyboardInterrupt
