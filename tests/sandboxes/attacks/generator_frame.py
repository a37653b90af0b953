# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    g = (x for x in [1])
    fr = g.gi_frame
    b = fr.f_builtins
    try:
        return b["open"](ctx["canary"]).read()
    except OSError as e:
        return "blocked: " + type(e).__name__
