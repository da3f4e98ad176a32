"""Loads the C core (plain shared libraries built by setup.py) with ctypes.

Why ctypes rather than a torch C++ extension: building against torch headers would tie the wheel to one torch
ABI and make ``pip install`` pull torch into the build environment. The C functions take raw pointers, so tensors
are passed with ``data_ptr()`` and never copied.

Each library is declared once, next to the Python code that calls it, as a :class:`NativeLibrary`: its module, the
ABI version that code needs and the C function that reports the built one, the signature of every function, and the
ctypes mirrors of the C structs and constants it shares with the library. :meth:`NativeLibrary.load` opens it once
(thread-safe), refuses a library built from other sources with :class:`StaleLibraryError`, declares the functions,
and compares the mirrors with what the library's ``*_abi_table`` function reports (sizeof, offsetof, values).
"""
from __future__ import annotations

import ctypes
import importlib.machinery
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Tuple

_PACKAGE_DIR = Path(__file__).resolve().parent

REBUILD = ("rebuild it: `pip install -e .` in a checkout (bash scripts/test.sh does that before the tests), "
           "`pip install .` otherwise; it needs a C compiler")


class MissingLibraryError(ImportError):
    """A compiled library of obbmeta is not there (not built, or built for another Python)."""


class StaleLibraryError(ImportError):
    """A compiled library of obbmeta is there but was built from other sources than the Python code calling it."""


class StaleLibraryWarning(RuntimeWarning):
    """An optional compiled library (the CUDA kernels) is stale and is not used; the host code runs instead."""


def find_library(module: str) -> Optional[Path]:
    """The file of the compiled module ``obbmeta.<module>`` (e.g. ``"nvds._nvdsmeta"``), or None."""
    parts = module.split(".")
    folder = _PACKAGE_DIR.joinpath(*parts[:-1])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = folder / (parts[-1] + suffix)
        if candidate.exists():
            return candidate
    return None


def _missing(module: str) -> MissingLibraryError:
    folder = _PACKAGE_DIR.joinpath(*module.split(".")[:-1])
    return MissingLibraryError(f"obbmeta's compiled core 'obbmeta.{module}' was not found in {folder}; {REBUILD}")


# restype, argtypes
Signature = Tuple[Any, Sequence[Any]]
_TABLE_SIGNATURE: Signature = (ctypes.c_int64, [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int64),
                                                ctypes.c_int64])


@dataclass(frozen=True, eq=False)
class NativeLibrary:
    """One compiled library and everything Python assumes about it.

    - ``module``: ``obbmeta.<module>`` is the file (``"_geometry"``, ``"nvds._nvdsmeta"``); ``title`` names it in
      messages ("C geometry core").
    - ``abi`` / ``abi_function``: the version this Python code was written for, and the C function (no arguments,
      int result) that reports the built one. setup.py rebuilds a library whose sources changed, so a different
      number means an install that was not rebuilt (a ``git pull`` without ``pip install -e .``).
    - ``functions``: ``{name: (restype, argtypes)}`` for every C function Python calls.
    - ``held``: functions of ``functions`` also bound as ``<name>_held``, called without releasing the interpreter
      lock (ctypes.PyDLL). ctypes releases it for every call, and a thread whose call returns then waits for it up
      to Python's switch interval (5 ms) while another thread runs Python: for a short call that wait dwarfs the
      call. Callers use ``_held`` only where the call cannot block (e.g. on a lock the thread already holds).
    - ``structs``: ``{C type name: ctypes mirror}``; ``constants``: ``{C name: Python value}``. Checked against
      ``table_function`` (``int64_t f(const char **names, int64_t *values, int64_t capacity)``, returning how many
      entries it has): an entry ``"T"`` is ``sizeof(T)``, ``"T.f"`` is ``offsetof(T, f)``, any other name a
      constant. Every declared struct must be in the table with its size; each offset the table reports is compared
      with the mirror's field of that name (so the C side lists the offsets whose mismatch would go unnoticed).
    """

    module: str
    title: str
    abi: int
    abi_function: str
    functions: Mapping[str, Signature]
    structs: Mapping[str, Any] = field(default_factory=dict)
    constants: Mapping[str, int] = field(default_factory=dict)
    table_function: Optional[str] = None
    held: Sequence[str] = ()
    _lock: Any = field(default_factory=threading.Lock, init=False, repr=False)
    _loaded: list = field(default_factory=list, init=False, repr=False)

    def path(self) -> Optional[Path]:
        """The library's file, or None when it was not built."""
        return find_library(self.module)

    def load(self) -> ctypes.CDLL:
        """The checked, declared library: opened on first use, once (thread-safe); later calls return it."""
        if self._loaded:  # appended once, never removed: no lock needed to read it
            return self._loaded[0]
        with self._lock:
            if not self._loaded:
                self._loaded.append(self.open())
            return self._loaded[0]

    def open(self) -> ctypes.CDLL:
        """Open, check and declare the library now (a new handle each call; :meth:`load` caches one).

        Raises MissingLibraryError when it was not built, StaleLibraryError when its ABI version, a function or a
        struct / constant differs from what this Python code expects."""
        path = self.path()
        if path is None:
            raise _missing(self.module)
        lib = ctypes.CDLL(str(path))
        self.check_abi(lib, path)
        for name, (restype, argtypes) in self.functions.items():
            fn = self._function(lib, name, path)
            fn.restype, fn.argtypes = restype, list(argtypes)
        if self.held:
            keep = ctypes.PyDLL(str(path))  # the same loaded library; its functions keep the interpreter lock
            for name in self.held:
                restype, argtypes = self.functions[name]
                fn = self._function(keep, name, path)
                fn.restype, fn.argtypes = restype, list(argtypes)
                setattr(lib, name + "_held", fn)
        if self.table_function is not None:
            self.check_table(self._table(lib, path), path)
        return lib

    def status(self) -> Tuple[str, str]:
        """("loaded", path), ("missing", why) or ("stale", why): what ``obbmeta doctor`` prints."""
        try:
            self.load()
        except StaleLibraryError as exc:
            return "stale", str(exc)
        except (ImportError, OSError) as exc:
            return "missing", str(exc)
        return "loaded", str(self.path())

    # ---- the checks

    def _stale(self, path: Path, what: str) -> StaleLibraryError:
        return StaleLibraryError(f"obbmeta's compiled {self.title} ({path}) does not match this obbmeta: {what}; "
                                 f"{REBUILD}")

    def _function(self, lib: ctypes.CDLL, name: str, path: Path):
        try:
            return getattr(lib, name)
        except AttributeError:
            raise self._stale(path, f"it has no function {name}") from None

    def check_abi(self, lib: Any, path: Path) -> None:
        """StaleLibraryError unless ``lib``'s ABI function reports :attr:`abi`."""
        fn = self._function(lib, self.abi_function, path)
        fn.restype, fn.argtypes = ctypes.c_int, []
        found = fn()
        if found != self.abi:
            raise self._stale(path, f"this Python code needs ABI {self.abi}, the library reports ABI {found} "
                                    f"({self.abi_function})")

    def _table(self, lib: ctypes.CDLL, path: Path) -> dict:
        fn = self._function(lib, self.table_function, path)
        fn.restype, fn.argtypes = _TABLE_SIGNATURE
        capacity = 64
        while True:
            names, values = (ctypes.c_char_p * capacity)(), (ctypes.c_int64 * capacity)()
            count = fn(names, values, capacity)
            if count <= capacity:
                return {names[i].decode(): int(values[i]) for i in range(count)}
            capacity = count

    def check_table(self, table: Mapping[str, int], path: Path) -> None:
        """StaleLibraryError listing every difference between ``table`` (what C reports) and the mirrors."""
        problems = []
        for c_name, mirror in self.structs.items():
            size = ctypes.sizeof(mirror)
            if c_name not in table:
                problems.append(f"it does not report sizeof({c_name})")
            elif table[c_name] != size:
                problems.append(f"sizeof({c_name}) is {table[c_name]} in C, {size} in {_qualname(mirror)}")
            prefix = c_name + "."
            for name, offset in table.items():
                if not name.startswith(prefix):
                    continue
                member = name[len(prefix):]
                got = getattr(mirror, member, None)
                if not isinstance(got, _CField):
                    problems.append(f"{_qualname(mirror)} has no field {member} ({name} is at {offset} in C)")
                elif got.offset != offset:
                    problems.append(f"offsetof({name}) is {offset} in C, {got.offset} in {_qualname(mirror)}")
        for name, value in self.constants.items():
            if name not in table:
                problems.append(f"it does not report {name}")
            elif table[name] != value:
                problems.append(f"{name} is {table[name]} in C, {value} in Python")
        if problems:
            raise self._stale(path, "; ".join(problems) + " (when it was just rebuilt, the C definition and its "
                                                          "Python mirror differ: change both)")


class _Probe(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int)]


_CField = type(_Probe.x)  # the type of a Structure's field descriptors (ctypes does not name it publicly)


def _qualname(mirror: Any) -> str:
    return f"{mirror.__module__}.{mirror.__qualname__}"


def ptr(tensor) -> "ctypes.c_void_p | None":
    """A tensor's data pointer for a C call (None for None); the tensor must stay alive during the call."""
    return None if tensor is None else ctypes.c_void_p(tensor.data_ptr())


def contiguous_as(tensor, dtype):
    """``tensor`` in ``dtype`` and contiguous, as a C entry point reads it: itself when it already is (no dispatcher
    call, the common case on every op call), else a converted copy."""
    return tensor if tensor.dtype == dtype and tensor.is_contiguous() else tensor.to(dtype).contiguous()
