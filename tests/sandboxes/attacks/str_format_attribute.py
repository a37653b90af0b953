# ruff: noqa
# class: introspection escape
# expect: contained
def attack(ctx):
    return f"{(0).__class__.__mro__[1].__subclasses__}"[:60] + \
        f"{attack.__globals__}"[:2000].count("open").__str__()
