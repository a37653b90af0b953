# ruff: noqa
# class: resource exhaustion
# expect: SandboxCodeError
def attack(ctx):
    def down(n):
        return down(n + 1) + 1
    return down(0)
