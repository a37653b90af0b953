# ruff: noqa
# class: deserialisation
# expect: SandboxCodeError
import pickle


def attack(ctx):
    payload = b"cbuiltins\nopen\n(V" + ctx["canary"].encode() + b"\ntR."
    return pickle.loads(payload).read()
