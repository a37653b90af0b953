# ruff: noqa
# class: resource exhaustion
# expect: contained
def attack(ctx):
    for _ in range(200):
        print("x" * 100000)
    return "flooded"
