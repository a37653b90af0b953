# ruff: noqa
# class: import escape
# expect: SandboxCodeError
def attack(ctx):
    b = __builtins__
    opener = b["open"] if isinstance(b, dict) else b.open
    return opener(ctx["canary"]).read()
