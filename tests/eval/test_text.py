import math
from functools import lru_cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obbmeta.eval import character_error_rate, edit_distance
from obbmeta.eval.text import error_counts

TEXT = st.text(alphabet="ab c1", max_size=12)


def _recursive_distance(a, b):
    """Levenshtein distance by its definition, recursing from the front (the library's DP runs row by row)."""
    @lru_cache(maxsize=None)
    def d(i, j):
        if i == len(a):
            return len(b) - j
        if j == len(b):
            return len(a) - i
        return min(d(i + 1, j) + 1, d(i, j + 1) + 1, d(i + 1, j + 1) + (a[i] != b[j]))

    return d(0, 0)


@given(TEXT, TEXT)
def test_edit_distance_equals_the_recursive_definition(a, b):
    assert edit_distance(a, b) == _recursive_distance(a, b)


@given(st.text(max_size=30), st.text(max_size=30))
def test_edit_distance_equals_rapidfuzz(a, b):
    levenshtein = pytest.importorskip("rapidfuzz.distance").Levenshtein
    assert edit_distance(a, b) == levenshtein.distance(a, b)


@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=6))
def test_cer_is_summed_edits_over_summed_reference_lengths(pairs):
    preds, refs = [p for p, _ in pairs], [r for _, r in pairs]
    edits = sum(_recursive_distance(p, r) for p, r in pairs)
    chars = sum(len(r) for r in refs)
    expected = edits / chars if chars else (0.0 if edits == 0 else math.inf)
    assert character_error_rate(preds, refs) == expected
    assert error_counts(preds, refs) == (edits, chars)


def test_known_values():
    assert edit_distance("kitten", "sitting") == 3
    assert character_error_rate(["kitten"], ["sitting"]) == pytest.approx(3 / 7)
    # Corpus level: the long reference weighs more than the short one.
    assert character_error_rate(["abcd", "x"], ["abce", "y"]) == pytest.approx(2 / 5)
    assert character_error_rate("abc", "abc") == 0.0
    assert character_error_rate(["toolong"], ["to"]) == pytest.approx(5 / 2)  # above 1 with insertions


def test_empty_strings():
    assert edit_distance("", "") == 0 and edit_distance("", "abc") == 3 and edit_distance("ab", "") == 2
    assert character_error_rate([""], ["abc"]) == 1.0
    assert character_error_rate(["", ""], ["", ""]) == 0.0
    assert character_error_rate(["a"], [""]) == math.inf


@pytest.mark.parametrize("preds, refs, error, match", [
    ([], [], ValueError, "nothing to score"),
    (["a"], ["a", "b"], ValueError, "same length"),
    (["a", 3], ["a", "b"], TypeError, r"predictions\[1\]"),
    (["a"], [None], TypeError, r"references\[0\]"),
    ("a", ["a"], TypeError, "both"),
    (5, [1], TypeError, "sequences"),
])
def test_bad_arguments_are_named(preds, refs, error, match):
    with pytest.raises(error, match=match):
        character_error_rate(preds, refs)


def test_edit_distance_names_a_bad_argument():
    with pytest.raises(TypeError, match="b must be a str"):
        edit_distance("a", ["a"])
