# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    g = globals()
    v = vars()
    return [sorted(k for k in g if not k.startswith("_")), sorted(v)]
