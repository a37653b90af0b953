# ruff: noqa
# class: introspection escape
# expect: SandboxCodeError
def attack(ctx):
    for cls in ().__class__.__bases__[0].__subclasses__():
        if cls.__name__ == "_wrap_close":
            system = cls.__init__.__globals__["system"]
            system("cat " + ctx["canary"] + " > /tmp/o")
            return cls.__init__.__globals__["open"]("/tmp/o").read() if False else open(ctx["canary"]).read()
    return "not found"
