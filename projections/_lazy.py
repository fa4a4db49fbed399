"""A mapping whose values stay msgpack-encoded until they are first read.

Restoring a large projection (tens of thousands of edges) would otherwise build every
value object up front; a query touches only a few dozen of them.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any, Generic, TypeVar

import msgspec

V = TypeVar("V")


class LazyMap(MutableMapping[str, V], Generic[V]):
    """A ``dict[str, V]`` holding ``msgspec.Raw`` values that decode on first read.

    ``raw_items()`` gives the stored form (decoded values, or the original bytes for
    values never read), so a snapshot re-encodes untouched values without decoding.
    """

    __slots__ = ("_data", "_decoder")

    def __init__(self, data: dict[str, Any] | None = None, decoder: Any = None) -> None:
        self._data: dict[str, Any] = data if data is not None else {}
        self._decoder = decoder

    def __getitem__(self, key: str) -> V:
        value = self._data[key]
        if isinstance(value, msgspec.Raw):
            value = self._decoder.decode(value)
            self._data[key] = value
        return value  # type: ignore[no-any-return]

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self._data:
            return default
        return self[key]

    def __setitem__(self, key: str, value: V) -> None:
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def raw_items(self) -> dict[str, Any]:
        """The stored values by key, without decoding any."""
        return self._data
