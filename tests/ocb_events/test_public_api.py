"""The curated surface of ocb_events and its exception tree."""

from __future__ import annotations

import inspect

import ocb_events
from ocb_events import errors
from ocb_events.errors import OcbError


def test_all_is_sorted_unique_and_resolvable() -> None:
    names = ocb_events.__all__
    assert names == sorted(names)
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(ocb_events, name), name


def test_every_error_is_exported_documented_and_under_ocb_error() -> None:
    classes = [
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if obj.__module__ == errors.__name__
    ]
    assert OcbError in classes
    for cls in classes:
        assert issubclass(cls, OcbError), cls
        assert cls.__name__ in ocb_events.__all__, cls
        assert cls.__doc__ and cls.__doc__.strip(), cls
        assert cls.__name__ in errors.__doc__, f"{cls.__name__} missing from the drawn tree"
