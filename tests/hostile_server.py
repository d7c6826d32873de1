"""A scripted API server that misbehaves, on loopback (plain HTTP/1.1, just enough of it): each request takes
the next step of its path's script — an answer, a hang, a body that trickles in. kube-apiserver cannot be made
to misbehave on demand; the clients' tests use this one to see what they do when a server does."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator

import pytest

__all__ = ["HostileServer", "Step", "answer", "hang", "hostile", "trickle"]

Step = Callable[[socket.socket], None]


def answer(status: int, body: bytes, *, chunked: bool = False) -> Step:
    def step(sock: socket.socket) -> None:
        head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        if chunked:
            sock.sendall(head.encode() + b"Transfer-Encoding: chunked\r\n\r\n")
            for line in body.split(b"\n"):
                part = line + b"\n"
                sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            sock.sendall(b"0\r\n\r\n")
        else:
            sock.sendall(head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    return step


def hang(sock: socket.socket) -> None:
    """Read the request, never answer (until the client gives up)."""
    sock.settimeout(30)
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


def trickle(sock: socket.socket) -> None:
    """Headers at once, then the body one byte every 0.2 s: it would take 200 s."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    with contextlib.suppress(OSError):
        for _ in range(1000):
            sock.sendall(b" ")
            time.sleep(0.2)


class HostileServer:
    """Plain HTTP on a free loopback port; ``script[path]`` is consumed one step per request (the last step
    repeats)."""

    def __init__(self) -> None:
        self.script: dict[str, deque[Step]] = defaultdict(deque)
        self.requests: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        self._closed = False
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            self._socks.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError), sock:
            while True:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    head += chunk
                request_line = head.split(b"\r\n", 1)[0].decode()
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                rest = head.split(b"\r\n\r\n", 1)[1]
                while len(rest) < length:
                    rest += sock.recv(65536)
                path = request_line.split(" ")[1].split("?")[0]
                self.requests.append(request_line)
                steps = self.script.get(path)
                if not steps:  # not scripted: as a server that serves nothing there
                    answer(404, b'{"kind":"Status","code":404,"reason":"NotFound"}')(sock)
                    continue
                step = steps.popleft() if len(steps) > 1 else steps[0]
                step(sock)

    def close(self) -> None:
        self._closed = True
        self.server.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    server = HostileServer()
    yield server
    server.close()
