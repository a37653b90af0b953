# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    cls = getattr(ctx, "_" + "_class__")
    subs = getattr(getattr(cls, "_" + "_base__"), "_" + "_subclasses__")()
    return len(subs)
