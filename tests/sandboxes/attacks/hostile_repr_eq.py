# ruff: noqa
# class: hostile result
# expect: SandboxOutputError
class Evil:
    def __repr__(self):
        open("/tmp/repr-ran", "w").write("x")
        return "evil"
    def __eq__(self, other):
        raise SystemExit("eq ran")
    __hash__ = object.__hash__
def attack(ctx):
    return Evil()
