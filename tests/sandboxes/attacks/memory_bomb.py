# ruff: noqa
# class: resource exhaustion
# expect: SandboxMemoryError
def attack(ctx):
    return len(bytearray(4 * 1024 ** 3))
