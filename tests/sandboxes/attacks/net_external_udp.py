# ruff: noqa
# class: network
# expect: contained
import socket


def attack(ctx):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"x", ("1.1.1.1", 53))
        return "sent"
    except OSError as e:
        return type(e).__name__
