# ruff: noqa
# class: resource exhaustion
# expect: SandboxViolation
def attack(ctx):
    with open("big", "wb") as f:
        for _ in range(1000):
            f.write(b"x" * (1 << 20))
    return "filled"
