# ruff: noqa
# class: file access
# expect: SandboxCodeError
def attack(ctx):
    with open(ctx["canary"], "w") as f:
        f.write("pwned")
    return "written"
