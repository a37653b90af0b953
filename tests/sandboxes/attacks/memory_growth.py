# ruff: noqa
# class: resource exhaustion
# expect: SandboxMemoryError
def attack(ctx):
    hog = []
    while True:
        hog.append(" " * (16 << 20) + str(len(hog)))
