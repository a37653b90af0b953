# ruff: noqa
# class: network
# expect: contained
import socket


def attack(ctx):
    out = []
    for p in ["/var/run/docker.sock", ctx["engine_socket"]]:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(p)
            out.append([p, "connected"])
        except OSError as e:
            out.append([p, type(e).__name__])
    return out
