# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    g = attack.__globals__
    b = g["__builtins__"]
    opener = b["open"] if isinstance(b, dict) else b.open
    try:
        return opener(ctx["canary"]).read()
    except OSError as e:
        return "blocked: " + type(e).__name__
