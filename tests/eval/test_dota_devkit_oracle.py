"""evaluate() against the DOTA devkit's own evaluation (dotadevkit 1.3.0's ``evaluate/task1.py``: Jian Ding's
``dota_evaluation_task1.voc_eval`` with its C++ ``polyiou``), run on DOTA-format files written from random scenes.

Skipped when dotadevkit is not installed (scripts/test.sh installs requirements/oracles.txt with --no-deps).
Where the devkit's conventions differ from ours the scenes avoid the difference rather than hide it:
- it ranks with an unstable sort: scores are made distinct;
- it matches on ``IoU > t`` where we use ``>=``: no IoU within 1e-4 of a threshold (assume_unambiguous);
- its 11 recall points are ``np.arange(0, 1.1, 0.1)`` (0.3, 0.6, 0.7 one ulp high): 11-point AP is compared
  only for classes whose ground-truth count is not a multiple of 5, where no recall can equal those points.
"""
import math

import numpy as np
import pytest
import reference
from hypothesis import given
from hypothesis import strategies as st
from scenes import assume_unambiguous, scenes, to_boxes

from obbmeta.eval import average_precision, evaluate

task1 = pytest.importorskip("dotadevkit.evaluate.task1", reason="dotadevkit (DOTA devkit) is not installed")


@st.composite
def distinct_score_scenes(draw):
    detections, ground_truths = draw(scenes())
    n = sum(len(d) for d in detections)
    rank = iter(draw(st.permutations(range(n))))
    detections = [[(box, (next(rank) + 1) / (n + 1), label) for box, _, label in d] for d in detections]
    return detections, ground_truths


def polygon_text(box):
    return " ".join(f"{v:.17g}" for corner in reference.corners(box) for v in corner)


def devkit_ap(tmp_path, detections, ground_truths, c, threshold, use_07_metric):
    """Class c's AP from task1.voc_eval on files in the DOTA layout (labelTxt per image, Task1_<class>.txt)."""
    names = [f"img{i}" for i in range(len(ground_truths))]
    (tmp_path / "images.txt").write_text("\n".join(names) + "\n")
    for name, gts in zip(names, ground_truths):
        (tmp_path / f"{name}.txt").write_text(
            "".join(f"{polygon_text(box)} c{label} {int(diff)}\n" for box, label, diff in gts))
    (tmp_path / f"Task1_c{c}.txt").write_text("".join(
        f"{name} {score!r} {polygon_text(box)}\n"
        for name, dets in zip(names, detections) for box, score, label in dets if label == c))
    _, _, ap = task1.voc_eval(str(tmp_path / "Task1_{:s}.txt"), str(tmp_path / "{:s}.txt"),
                              str(tmp_path / "images.txt"), f"c{c}", ovthresh=threshold,
                              use_07_metric=use_07_metric, version="1.0")
    return float(ap)


@given(distinct_score_scenes(), st.sampled_from([0.5, 0.75]))
def test_ap_matches_the_dota_devkit(tmp_path_factory, scene, threshold):
    detections, ground_truths = scene
    assume_unambiguous(detections, ground_truths, (threshold,))
    dets, gts, difficult = to_boxes(detections, ground_truths)
    tmp_path = tmp_path_factory.mktemp("dota")
    for metric in ("area", "voc07"):
        res = evaluate(dets, gts, difficult=difficult, iou_threshold=threshold, metric=metric)
        for c, e in res.classes.items():
            if e.num_gt == 0 or (metric == "voc07" and e.num_gt % 5 == 0):
                continue
            expected = devkit_ap(tmp_path, detections, ground_truths, c, threshold, metric == "voc07") \
                if e.num_det else 0.0  # the devkit cannot read an empty detection file
            assert math.isclose(e.ap[0], expected, rel_tol=0, abs_tol=1e-12), (metric, c, e.ap[0], expected)


def test_the_known_difference_devkit_eleven_points_skip_a_recall_of_exactly_three_tenths():
    rec, prec = np.array([0.3]), np.array([1.0])
    assert task1.voc_ap(rec, prec, use_07_metric=True) == pytest.approx(3 / 11)  # its r = 0.30000000000000004
    assert average_precision(rec, prec, "voc07") == pytest.approx(4 / 11)
    assert task1.voc_ap(rec, prec, use_07_metric=False) == average_precision(rec, prec, "area")
