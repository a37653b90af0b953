# ruff: noqa
# class: hostile result
# expect: SandboxOutputError
class S(str):
    def __eq__(self, other):
        while True:
            pass
    __hash__ = str.__hash__
def attack(ctx):
    return [S("1")]
