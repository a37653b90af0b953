# ruff: noqa
# class: import escape
# expect: SandboxCodeError
def attack(ctx):
    os = __import__("os")
    return [os.environ.get(ctx["env_name"]), open(ctx["canary"]).read()]
