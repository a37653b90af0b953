# ruff: noqa
# class: introspection escape
# expect: contained|SandboxCodeError
def attack(ctx):
    for cls in object.__subclasses__():
        if cls.__name__ == "catch_warnings":
            imp = cls()._module.__builtins__["__import__"]
            return imp("os").popen("cat " + ctx["canary"]).read() or open(ctx["canary"]).read()
    return "not found"
