"""Class labels: nvinfer's label files, comma-separated names, and the labels objects get.

nvinfer reads a label file line by line, skips empty lines (so a later line moves up one index) and splits each line
on ``;`` without trimming: a detector's class ``c`` is the first field of line ``c``; a classifier's output ``l`` is
line ``l`` with its classes separated by ``;``. A class without a line gets an empty label (the object is still
written). obbmeta reads them the same way, except that a Windows line ending is not part of the label.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence


class LabelFileError(ValueError):
    """A label file that cannot be read as text (not UTF-8); a missing one is a FileNotFoundError."""


def read_label_file(path: str) -> list[list[str]]:
    """nvinfer's label file: one list of ``;`` fields per non-empty line."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"label file {path!r} does not exist (or is not a file)")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise LabelFileError(f"label file {path!r}:{line}: not UTF-8 text ({exc.reason})") from None
    rows = []
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if line:
            rows.append(line.split(";"))
    return rows


def looks_like_path(text: str) -> bool:
    return "," not in text and (os.sep in text or text.startswith(".") or
                                os.path.splitext(text)[1].lower() in (".txt", ".names", ".labels", ".csv"))


def parse_class_names(value: Any) -> list[str] | None:
    """A comma-separated list, a label file (a detector's: a line's first ``;`` field), or a sequence of str; '' or
    None -> None. A value that looks like a path (has a ``/``, starts with ``.`` or ends in ``.txt`` / ``.names`` /
    ``.labels``) must be an existing file: a mistyped path is an error, never a one-class list. Names from a file may
    be empty (an empty label, as nvinfer writes it); names given inline may not."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if os.path.isfile(value) or looks_like_path(value):
            return [row[0] for row in read_label_file(value)]
        names = [n.strip() for n in value.split(",")]
    else:
        names = list(value)
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n:
            raise ValueError(f"class_names[{i}] must be a non-empty str, got {n!r}")
    return names


@dataclass
class Labels:
    """The labels a detector's objects get: ``names[class_id]``, an empty label for a class without one (as nvinfer
    writes it; ``missing`` records which classes met that, so the element can say so once each)."""
    names: list[str] | None
    missing: set

    @classmethod
    def of(cls, names: Sequence[str] | None) -> "Labels":
        return cls(list(names) if names is not None else None, set())

    def table(self, labels: Sequence[int]) -> list[str] | None:
        """The name table covering every class id in ``labels`` (padded with empty labels, recorded in
        ``missing``); None without names (objects then get their class id)."""
        if self.names is None:
            return None
        top = max(labels, default=-1)
        if top < len(self.names):
            return self.names
        self.missing.update(c for c in set(labels) if c >= len(self.names))
        return self.names + [""] * (top + 1 - len(self.names))


__all__ = ["read_label_file", "parse_class_names", "looks_like_path", "Labels", "LabelFileError"]
