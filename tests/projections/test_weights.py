"""The graph's weight runs folded as arrays (``projections._weights``): the sorting
they rely on keeps the order of equal keys, whatever the keys' range."""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from projections._weights import _stable_order

_keys = st.integers(0, 3).flatmap(
    lambda width: st.lists(st.integers(0, [2**8, 2**16 - 1, 2**32 - 1, 2**40][width]), max_size=300)
)


@given(keys=_keys, repeat=st.integers(1, 3))
def test_the_order_is_the_stable_sorting_order_of_any_keys(keys: list[int], repeat: int) -> None:
    arr = np.array(keys * repeat, dtype=np.int64)  # repeated keys: ties to keep in order
    assert np.array_equal(_stable_order(arr), np.argsort(arr, kind="stable"))
