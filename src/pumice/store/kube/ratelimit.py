"""A client-side token bucket, as client-go's ``flowcontrol`` rate limiter: ``qps`` a second, ``burst`` at once."""

from __future__ import annotations

import asyncio
import time

__all__ = ["TokenBucket"]


class TokenBucket:
    """``await acquire()`` takes one token, waiting while the bucket is empty (FIFO among waiters)."""

    def __init__(self, qps: float, burst: int) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.qps = float(qps)
        self.burst = int(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._lock: asyncio.Lock | None = None
        self.waited = 0.0  # seconds spent waiting for tokens, for diagnostics

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now

    async def acquire(self) -> None:
        self._refill()
        if self._tokens >= 1 and (self._lock is None or not self._lock.locked()):
            self._tokens -= 1
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one waiter at a time sleeps for the next token: first come, first served
            self._refill()
            while self._tokens < 1:
                delay = (1 - self._tokens) / self.qps
                self.waited += delay
                await asyncio.sleep(delay)
                self._refill()
            self._tokens -= 1
