# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    try:
        return eval("open(%r).read()" % ctx["canary"])
    except OSError as e:
        return "blocked: " + type(e).__name__
