"""Greedy CTC decoding of a text recogniser's per-column class scores into strings, and charset files.

A CTC recogniser (CRNN-style) scores each of T columns of a text crop over C classes: one *blank* and C - 1
characters. The best path takes the highest class of every column; collapsing it (merge runs of the same class,
then drop blanks) gives the string — ``"-hh-e-ll-llo"`` reads ``"hello"``, and a blank between two equal classes is
what keeps a double letter. This is the greedy (best-path) decode; it is the exact maximum of the path
probability, not of the string probability that ``torch.nn.functional.ctc_loss`` sums over all paths.

Classes: ``blank`` (default 0) is the blank; the others are the charset's tokens in order, skipping the blank's
index — with ``blank=0``, class ``i`` is ``charset[i - 1]``.

Charset files (:func:`read_charset`): UTF-8 text, one token per line, in class order, the blank not listed. Only the
line break is stripped, so a line holding a single space is the space character; an empty line is an error (except
for the file's final line break). A token is usually one character but may be longer (``"<unk>"``).
"""
from __future__ import annotations

import os
from typing import List, Sequence, Tuple, Union

import torch

Charset = Union[str, Sequence[str]]


def ctc_greedy(logits: torch.Tensor, charset: Charset, blank: int = 0) -> Tuple[List[str], torch.Tensor]:
    """Best-path CTC decode of (K, T, C) scores into K strings.

    Args:
        logits: (K, T, C) float tensor, logits or log-probabilities (a softmax over C turns either into
            probabilities; do not pass probabilities), on any device.
        charset: the C - 1 non-blank tokens in class order (a ``str`` of characters or a sequence of strings).
        blank: the blank's class index, in [0, C).

    Returns:
        ``(strings, confidence)``: K strings, and a (K,) float32 tensor on the CPU: the mean over the columns that
        emitted a character (the first column of each run of a non-blank class) of that column's highest
        probability. A string with no character gets the mean over all columns of their highest (blank)
        probability — how sure the model is that there is nothing to read; with T = 0 it is 0.
    """
    tokens = _check_charset(charset)
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a (K, T, C) tensor, got {shape}")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point tensor, got {logits.dtype}")
    k, t, c = logits.shape
    if c != len(tokens) + 1:
        raise ValueError(f"logits have C = {c} classes but charset has {len(tokens)} tokens (expected C - 1 = "
                         f"{c - 1}: the blank is not in the charset)")
    if isinstance(blank, bool) or not isinstance(blank, int) or not 0 <= blank < c:
        raise ValueError(f"blank must be a class index in [0, {c}), got {blank!r}")
    if k == 0:
        return [], torch.zeros(0)
    if t == 0:
        return [""] * k, torch.zeros(k)
    prob, best = torch.softmax(logits.detach().float(), dim=-1).max(dim=-1)  # (K, T)
    prev = torch.cat([torch.full_like(best[:, :1], -1), best[:, :-1]], dim=1)
    emit = (best != blank) & (best != prev)  # the first column of each run of a character
    n = emit.sum(1)
    conf = torch.where(n > 0, (prob * emit).sum(1) / n.clamp(min=1), prob.mean(1))
    # One copy to the host for all K strings; the characters come from the lookup below.
    best_h, emit_h = best.cpu().tolist(), emit.cpu().tolist()
    lookup = [""] * c
    for i in range(c):
        if i != blank:
            lookup[i] = tokens[i if i < blank else i - 1]
    strings = ["".join(lookup[cls] for cls, e in zip(row, flags) if e) for row, flags in zip(best_h, emit_h)]
    return strings, conf.cpu()


def encode(texts: Sequence[str], charset: Charset, blank: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """Strings -> CTC targets: ``(targets, lengths)``, targets (K, L) int64 class indices padded with the blank
    (L = the longest string, at least 1), lengths (K,) int64 — the form ``torch.nn.functional.ctc_loss`` takes.
    Only single-character tokens are matched; a character missing from the charset raises ``ValueError``."""
    tokens = _check_charset(charset)
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    index = {tok: (i if i < blank else i + 1) for i, tok in enumerate(tokens)}
    rows = []
    for j, s in enumerate(texts):
        if not isinstance(s, str):
            raise TypeError(f"texts[{j}] must be a str, got {type(s).__name__}")
        try:
            rows.append([index[ch] for ch in s])
        except KeyError as exc:
            raise ValueError(f"texts[{j}] = {s!r} holds {exc.args[0]!r}, which is not in the charset") from None
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.int64)
    targets = torch.full((len(rows), max([len(r) for r in rows] + [1])), blank, dtype=torch.int64)
    for j, r in enumerate(rows):
        targets[j, :len(r)] = torch.tensor(r, dtype=torch.int64)
    return targets, lengths


def read_charset(path: Union[str, os.PathLike]) -> Tuple[str, ...]:
    """The tokens of a charset file (UTF-8, one token per line, blank not listed; see the module docstring)."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final line break
    tokens = []
    for no, line in enumerate(lines, 1):
        tok = line[:-1] if line.endswith("\r") else line
        if tok == "":
            raise ValueError(f"{path}: line {no} is empty (one token per line; a space is a line holding ' ')")
        tokens.append(tok)
    return _check_charset(tokens, name=str(path))


def write_charset(path: Union[str, os.PathLike], charset: Charset) -> None:
    """Write ``charset`` as a charset file that :func:`read_charset` reads back unchanged."""
    tokens = _check_charset(charset)
    if any("\n" in t or "\r" in t for t in tokens):
        raise ValueError("charset tokens must not hold line breaks")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(t + "\n" for t in tokens))


def _check_charset(charset, name: str = "charset") -> Tuple[str, ...]:
    if isinstance(charset, str):
        tokens = tuple(charset)
    else:
        try:
            tokens = tuple(charset)
        except TypeError:
            raise TypeError(f"{name} must be a str or a sequence of str tokens, got {type(charset).__name__}") \
                from None
        for i, tok in enumerate(tokens):
            if not isinstance(tok, str) or not tok:
                raise TypeError(f"{name}[{i}] must be a non-empty str, got {tok!r}")
    if not tokens:
        raise ValueError(f"{name} must hold at least one token")
    if len(set(tokens)) != len(tokens):
        dup = sorted({t for t in tokens if tokens.count(t) > 1})
        raise ValueError(f"{name} holds duplicate tokens: {dup}")
    return tokens
