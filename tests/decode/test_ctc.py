import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from devices import DEVICES
from hypothesis import given
from hypothesis import strategies as st

from obbmeta.decode import ctc_greedy, read_charset
from obbmeta.decode.ctc import encode, write_charset

CHARS = "abc"


def _reference_decode(logits, charset, blank=0):
    """Slow and plain: per row, the argmax class of each column, runs merged, blanks dropped; confidence the mean of
    the softmax maxima at the first column of each kept run (all columns when nothing is kept)."""
    out, conf = [], []
    for row in logits.double().tolist():
        probs = []
        for col in row:
            m = max(col)
            e = [math.exp(v - m) for v in col]
            probs.append([v / sum(e) for v in e])
        best = [max(range(len(p)), key=lambda c: (p[c], -c)) for p in probs]
        text, kept, prev = [], [], None
        for t, c in enumerate(best):
            if c != prev and c != blank:
                text.append(charset[c - 1] if c > blank else charset[c])
                kept.append(probs[t][c])
            prev = c
        out.append("".join(text))
        every = [max(p) for p in probs]
        conf.append(sum(kept) / len(kept) if kept else (sum(every) / len(every) if every else 0.0))
    return out, conf


def _path_logits(path, num_classes, k=4.0):
    """(1, T, C) logits whose best path is ``path`` (class indices), by a margin of ``k``."""
    x = torch.zeros(1, len(path), num_classes)
    for t, c in enumerate(path):
        x[0, t, c] = k
    return x


def test_runs_merge_and_blanks_separate_double_letters():
    # "-aa-a-bb--c" reads "aabc": a blank between the two runs of a keeps the double letter.
    path = [0, 1, 1, 0, 1, 0, 2, 2, 0, 0, 3]
    strings, conf = ctc_greedy(_path_logits(path, 4), CHARS)
    assert strings == ["aabc"]
    p = math.exp(4) / (math.exp(4) + 3)
    assert conf.tolist() == pytest.approx([p])


@pytest.mark.parametrize("device", DEVICES)
@given(st.data())
def test_greedy_decode_equals_a_slow_reference(device, data):
    k = data.draw(st.integers(0, 4))
    t = data.draw(st.integers(0, 12))
    c = data.draw(st.integers(2, 6))
    blank = data.draw(st.integers(0, c - 1))
    # Small integer logits make repeats and blanks frequent; a tiny per-class ramp breaks ties like argmax does
    # (the first maximum wins), which the reference mirrors.
    values = data.draw(st.lists(st.integers(-2, 2), min_size=k * t * c, max_size=k * t * c))
    logits = torch.tensor(values, dtype=torch.float32).reshape(k, t, c) - torch.arange(c) * 1e-3
    charset = "abcdefgh"[:c - 1]
    strings, conf = ctc_greedy(logits.to(device), charset, blank=blank)
    ref_s, ref_c = _reference_decode(logits, charset, blank)
    assert strings == ref_s
    assert conf.device.type == "cpu" and conf.dtype == torch.float32
    assert conf.tolist() == pytest.approx(ref_c, abs=1e-5)


def test_the_decoded_string_is_the_collapse_of_the_most_probable_path():
    # Brute force over every path of a short sequence: the greedy string is the collapse of the single most
    # probable path, and ctc_loss scores that path's string no worse than the path alone.
    torch.manual_seed(0)
    for _ in range(20):
        logits = torch.randn(1, 5, 3) * 2
        logp = logits.log_softmax(-1)
        best = max(itertools.product(range(3), repeat=5), key=lambda p: sum(logp[0, t, c] for t, c in enumerate(p)))
        collapsed = "".join(CHARS[c - 1] for i, c in enumerate(best) if c and (i == 0 or c != best[i - 1]))
        strings, _ = ctc_greedy(logits, CHARS[:2])
        assert strings == [collapsed]
        if collapsed:
            targets, lengths = encode(strings, CHARS[:2])
            nll = F.ctc_loss(logp.transpose(0, 1), targets, torch.tensor([5]), lengths, reduction="sum")
            path_nll = -sum(float(logp[0, t, c]) for t, c in enumerate(best))
            assert float(nll) <= path_nll + 1e-5


def test_log_probabilities_decode_like_logits():
    torch.manual_seed(1)
    logits = torch.randn(3, 9, 4)
    a = ctc_greedy(logits, CHARS)
    b = ctc_greedy(logits.log_softmax(-1), CHARS)
    assert a[0] == b[0] and torch.allclose(a[1], b[1])


def test_a_string_with_no_character_gets_the_blank_paths_confidence():
    logits = torch.zeros(2, 3, 4)
    logits[0, :, 0] = 5.0
    strings, conf = ctc_greedy(logits, CHARS)
    assert strings == ["", ""]
    assert conf[0] == pytest.approx(math.exp(5) / (math.exp(5) + 3))
    assert conf[1] == pytest.approx(0.25)


def test_empty_batches_and_zero_columns_are_documented_results():
    s, c = ctc_greedy(torch.zeros(0, 5, 4), CHARS)
    assert s == [] and c.shape == (0,)
    s, c = ctc_greedy(torch.zeros(2, 0, 4), CHARS)
    assert s == ["", ""] and c.tolist() == [0.0, 0.0]


def test_multi_character_tokens_join():
    strings, _ = ctc_greedy(_path_logits([1, 0, 2, 2, 3], 4), ["<a>", "b", "cd"])
    assert strings == ["<a>bcd"]


@pytest.mark.parametrize("args, match", [
    ((torch.zeros(2, 3), CHARS), r"\(K, T, C\)"),
    ((torch.zeros(1, 3, 5), CHARS), "C - 1 = 4"),
    ((torch.zeros(1, 3, 4, dtype=torch.int64), CHARS), "floating-point"),
    ((torch.zeros(1, 3, 4), "aab"), "duplicate"),
    ((torch.zeros(1, 3, 4), ""), "at least one"),
    ((torch.zeros(1, 3, 4), ["a", "", "c"]), r"charset\[1\]"),
])
def test_bad_arguments_are_named(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ctc_greedy(*args)


@pytest.mark.parametrize("blank", [-1, 4, True, 1.0])
def test_the_blank_must_be_a_class_index(blank):
    with pytest.raises(ValueError, match="blank"):
        ctc_greedy(torch.zeros(1, 3, 4), CHARS, blank=blank)


def test_encode_gives_ctc_loss_targets():
    targets, lengths = encode(["ab", "", "cab"], CHARS)
    assert targets.tolist() == [[1, 2, 0], [0, 0, 0], [3, 1, 2]] and lengths.tolist() == [2, 0, 3]
    targets, _ = encode(["ab"], CHARS, blank=3)
    assert targets.tolist() == [[0, 1]]
    with pytest.raises(ValueError, match="'z'"):
        encode(["az"], CHARS)
    with pytest.raises(TypeError, match="sequence"):
        encode("ab", CHARS)


def test_charset_files_round_trip_with_a_space_token(tmp_path):
    path = tmp_path / "charset.txt"
    write_charset(path, [" ", "a", "b", "<unk>"])
    assert path.read_text(encoding="utf-8") == " \na\nb\n<unk>\n"
    assert read_charset(path) == (" ", "a", "b", "<unk>")
    path.write_bytes(b"x\r\ny\r\nz")  # CRLF line breaks, no final line break
    assert read_charset(path) == ("x", "y", "z")


@pytest.mark.parametrize("content, match", [(b"a\n\nb\n", "line 2 is empty"), (b"a\nb\na\n", "duplicate"),
                                            (b"", "at least one")])
def test_bad_charset_files_say_what_is_wrong(tmp_path, content, match):
    path = tmp_path / "charset.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        read_charset(path)
