# ruff: noqa
# class: hostile result
# expect: SandboxOutputError
class K:
    def __hash__(self):
        return 1
def attack(ctx):
    return {K(): 1}
