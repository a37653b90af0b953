# ruff: noqa
# class: hostile result
# expect: SandboxTimeout
class E(Exception):
    def __str__(self):
        while True:
            pass
def attack(ctx):
    raise E()
