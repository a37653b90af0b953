# ruff: noqa
# class: network
# expect: SandboxCodeError
import socket


def attack(ctx):
    s = socket.create_connection(("127.0.0.1", ctx["http_port"]), timeout=0.3)
    s.sendall(b"GET /leak HTTP/1.0\r\n\r\n")
    return s.recv(100).decode()
