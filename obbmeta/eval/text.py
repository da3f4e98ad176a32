"""Character error rate (CER) of recognised strings against reference strings.

CER over a set = (sum of the Levenshtein edit distances between each prediction and its reference) / (sum of the
references' lengths), the usual corpus-level definition (one long reference weighs more than a short one). An
edit is one inserted, deleted or substituted character (Python ``str`` code points; no normalisation of case,
spaces or Unicode). It can exceed 1 when predictions hold more characters than the references.

Edge cases: references with no characters at all give 0.0 when every prediction is empty too, and ``math.inf``
otherwise (every predicted character is an insertion, against nothing); an empty set is an error.
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple, Union

Strings = Union[str, Sequence[str]]


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between ``a`` and ``b``: the fewest single-character insertions, deletions and
    substitutions that turn one into the other."""
    for name, s in (("a", a), ("b", b)):
        if not isinstance(s, str):
            raise TypeError(f"{name} must be a str, got {type(s).__name__}")
    if len(a) < len(b):
        a, b = b, a
    # Two rows of the dynamic programme over the shorter string.
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def error_counts(predictions: Strings, references: Strings) -> Tuple[int, int]:
    """``(edits, reference_characters)`` summed over the pairs (see :func:`character_error_rate`)."""
    preds, refs = _pairs(predictions, references)
    return sum(edit_distance(p, r) for p, r in zip(preds, refs)), sum(len(r) for r in refs)


def character_error_rate(predictions: Strings, references: Strings) -> float:
    """CER of ``predictions`` against ``references``: summed edit distances / summed reference lengths.

    Args:
        predictions: the recognised strings, a sequence of ``str`` (or one ``str``: one pair).
        references: the true strings, as many as ``predictions`` (a ``str`` when ``predictions`` is one).

    Returns:
        The CER as a float >= 0 (0.0 or ``math.inf`` when the references hold no characters; module docstring).
    """
    edits, chars = error_counts(predictions, references)
    if chars == 0:
        return 0.0 if edits == 0 else math.inf
    return edits / chars


def _pairs(predictions, references):
    one = [isinstance(predictions, str), isinstance(references, str)]
    if any(one):
        if not all(one):
            raise TypeError("predictions and references must both be str (one pair) or both sequences of str")
        return [predictions], [references]
    try:
        preds, refs = list(predictions), list(references)
    except TypeError:
        raise TypeError("predictions and references must be sequences of str") from None
    if len(preds) != len(refs):
        raise ValueError(f"predictions and references must have the same length, got {len(preds)} and {len(refs)}")
    if not refs:
        raise ValueError("predictions and references are empty: there is nothing to score")
    for name, seq in (("predictions", preds), ("references", refs)):
        for i, s in enumerate(seq):
            if not isinstance(s, str):
                raise TypeError(f"{name}[{i}] must be a str, got {type(s).__name__}")
    return preds, refs
