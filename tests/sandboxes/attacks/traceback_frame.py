# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    try:
        1 / 0
    except ZeroDivisionError as e:
        fr = e.__traceback__.tb_frame
        b = fr.f_globals["__builtins__"]
    opener = b["open"] if isinstance(b, dict) else b.open
    try:
        return opener(ctx["canary"]).read()
    except OSError as e:
        return "blocked: " + type(e).__name__
