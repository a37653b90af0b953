# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    src = "def f(p):\n    return open(p).read()\n"
    ns = {}
    exec(compile(src, "x", "exec"), ns)
    try:
        return ns["f"](ctx["canary"])
    except OSError as e:
        return "blocked: " + type(e).__name__
