"""The snapshot codec of a projection whose whole state is one msgspec Struct: its
canonical msgpack bytes (keys in a deterministic order), and the state decoded back."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

S = TypeVar("S", bound=msgspec.Struct)


def struct_codec(state_type: type[S]) -> tuple[Callable[[S], bytes], Callable[[bytes], S]]:
    """``(snapshot, restore)`` for states of ``state_type``."""
    encoder = msgspec.msgpack.Encoder(order="deterministic")
    decoder = msgspec.msgpack.Decoder(state_type)

    def snapshot(state: S) -> bytes:
        """Canonical bytes of the state."""
        return encoder.encode(state)

    def restore(data: bytes) -> S:
        """The state whose snapshot is ``data``."""
        return decoder.decode(data)

    return snapshot, restore
