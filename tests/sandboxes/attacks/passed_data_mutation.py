# ruff: noqa
# class: passed objects
# expect: contained
def attack(ctx):
    ctx["canary"] = "changed"
    ctx.clear()
    return "mutated a copy"
