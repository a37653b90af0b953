# ruff: noqa
# class: passed objects
# expect: contained
def attack(ctx):
    out = [type(ctx).__name__, type(ctx["canary"]).__name__]
    meth = ctx.get
    out.append(type(meth.__self__).__name__)
    return out
