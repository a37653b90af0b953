# ruff: noqa
# class: secrets
# expect: contained
import os


def attack(ctx):
    return dict(os.environ)
