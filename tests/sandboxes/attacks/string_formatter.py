# ruff: noqa
# class: introspection escape
# expect: contained
import string


def attack(ctx):
    f = string.Formatter()
    obj, _ = f.get_field("0.__class__.__base__", [ctx], {})
    return str(len(obj.__subclasses__()))
