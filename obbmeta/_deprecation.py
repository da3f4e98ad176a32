"""Old public names kept working for a while: each lookup warns once per call site with the name to use instead."""
from __future__ import annotations

import warnings
from typing import Any, Callable


def renamed(module: str, names: dict[str, tuple[str, Callable[[], Any]]], stacklevel: int = 2
            ) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``names`` (old name -> (the name to use, a function returning the value))
    with a DeprecationWarning pointing at the user's line (``stacklevel``: 3 when a module's own ``__getattr__``
    calls this one); any other name is an AttributeError as usual."""
    def __getattr__(name: str) -> Any:
        if name in names:
            new, value = names[name]
            warnings.warn(f"{module}.{name} is deprecated and will be removed; use {new}", DeprecationWarning,
                          stacklevel=stacklevel)
            return value()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__


def renamed_property(owner: str, old: str, new: str) -> property:
    """A read-only property ``old`` that warns and reads ``new`` (``owner``: the class's public path, for the
    message)."""
    def get(self: Any) -> Any:
        warnings.warn(f"{owner}.{old} is deprecated and will be removed; use .{new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)
    return property(get, doc=f"Deprecated: the C name of :attr:`{new}`.")
