# ruff: noqa
# class: network
# expect: SandboxCodeError
import urllib.request


def attack(ctx):
    return urllib.request.urlopen("http://127.0.0.1:%d/leak" % ctx["http_port"], timeout=0.3).read().decode()
