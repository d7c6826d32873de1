"""A binary heap ordered by a session's ``less`` function (Volcano's util.PriorityQueue).

Given a ``key`` as well (a sort key that orders values exactly as ``less`` does, and is unique
per value), the heap compares keys instead — tuples compared in C rather than a chain of plugin
callbacks per comparison. The key of a value is taken when it is pushed, so it is only for values
whose order does not change while they wait in the queue (``Session.job_order_key`` says when).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("less", "value")

    def __init__(self, value: T, less: Callable[[T, T], bool]) -> None:
        self.value = value
        self.less = less

    def __lt__(self, other: _Entry[T]) -> bool:
        return self.less(self.value, other.value)


class PriorityQueue(Generic[T]):
    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = (),
                 key: Callable[[T], tuple[Any, ...] | None] | None = None) -> None:
        self._less = less
        #: With a key, the heap holds (key, push number, value); the number is never reached when
        #: keys are unique, and keeps a value from being compared if one is pushed twice.
        self._key = key
        self._pushed = itertools.count()
        self._heap: list[Any] = []
        if key is None:
            self._heap = [_Entry(v, less) for v in items]
            heapq.heapify(self._heap)
        else:
            for v in items:
                self.push(v)

    def push(self, value: T) -> None:
        if self._key is not None:
            k = self._key(value)
            if k is not None:
                heapq.heappush(self._heap, (k, next(self._pushed), value))
                return
            self._drop_keys()  # a value without a key: the queue goes back to ``less``
        heapq.heappush(self._heap, _Entry(value, self._less))

    def _drop_keys(self) -> None:
        self._key = None
        self._heap = [_Entry(value, self._less) for _, _, value in self._heap]
        heapq.heapify(self._heap)

    def pop(self) -> T:
        item = heapq.heappop(self._heap)
        value: T = item[2] if self._key is not None else item.value
        return value

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def clone(self) -> PriorityQueue[T]:
        q: PriorityQueue[T] = PriorityQueue(self._less, key=self._key)
        q._heap = list(self._heap)
        q._pushed = itertools.count(next(self._pushed))  # a clone's pushes stay after the original's
        return q
