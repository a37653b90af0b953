# ruff: noqa
# class: deserialisation
# expect: SandboxCodeError
import marshal


def attack(ctx):
    code = marshal.loads(marshal.dumps(compile("open(p).read()", "x", "eval")))
    return eval(code, {"p": ctx["canary"]})
