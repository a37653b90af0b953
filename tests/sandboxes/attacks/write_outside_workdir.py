# ruff: noqa
# class: file access
# expect: SandboxCodeError
def attack(ctx):
    with open("/usr/lib/python3.11/os.py", "a") as f:
        f.write("# pwned")
    return "written"
