"""A binary heap ordered by a session's ``less`` function (Volcano's util.PriorityQueue)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("less", "value")

    def __init__(self, value: T, less: Callable[[T, T], bool]) -> None:
        self.value = value
        self.less = less

    def __lt__(self, other: _Entry[T]) -> bool:
        return self.less(self.value, other.value)


class PriorityQueue(Generic[T]):
    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._heap = [_Entry(v, less) for v in items]
        heapq.heapify(self._heap)

    def push(self, value: T) -> None:
        heapq.heappush(self._heap, _Entry(value, self._less))

    def pop(self) -> T:
        return heapq.heappop(self._heap).value

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def clone(self) -> PriorityQueue[T]:
        q: PriorityQueue[T] = PriorityQueue(self._less)
        q._heap = list(self._heap)
        return q
