"""The registered operators are the contract: ``torch.ops.obbmeta.*`` called directly (as torch.compile, TorchScript
and other libraries do) answer like the Python wrappers on any float dtype and layout, their fake kernels report the
real kernels' dtypes and shapes, and the public functions trace with ``torch.compile(fullgraph=True)``.

Parametrised by device: the CUDA cases are skipped without a GPU and run on the GPU machine."""
import pytest
import torch
from devices import DEVICES
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

import obbmeta.decode  # noqa: F401  (registers obbmeta::yolo_obb_padded)
from obbmeta.ops import box_iou_rotated, nms_rotated

DTYPES = [torch.float32, torch.float64]
LAYOUTS = ["contiguous", "strided"]

IOU = torch.ops.obbmeta.box_iou_rotated.default
NMS = torch.ops.obbmeta.nms_rotated.default
PADDED = torch.ops.obbmeta.nms_rotated_padded.default
YOLO = torch.ops.obbmeta.yolo_obb_padded.default
HEAD = torch.rand(1, 4 + 3 + 1, 20)
CROP = torch.ops.obbmeta.crop_rotated.default
FRAME = torch.zeros(16, 16, 3, dtype=torch.uint8)
CROP_BOXES = torch.tensor([[0.0, 8.0, 8.0, 6.0, 4.0, 0.3]])

# Two overlapping pairs, one lone box, one degenerate box; scores with a tie (lower index first).
BOXES = [[10.0, 10.0, 8.0, 4.0, 0.3], [11.0, 10.0, 8.0, 4.0, 0.1], [40.0, 40.0, 4.0, 4.0, 0.0],
         [41.0, 40.5, 4.0, 3.0, -0.7], [60.0, 5.0, 0.0, 3.0, 0.0]]
SCORES = [0.9, 0.8, 0.7, 0.7, 0.95]
LABELS = [0, 0, 1, 2, 0]


def _layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    """The same values, either contiguous or as a strided view into a larger buffer."""
    if layout == "contiguous":
        return t
    wide = torch.zeros(t.shape[0], 2 * t.shape[-1] if t.dim() == 2 else 2, dtype=t.dtype, device=t.device)
    if t.dim() == 2:
        wide[:, ::2] = t
        view = wide[:, ::2]
    else:
        wide[:, 1] = t
        view = wide[:, 1]
    assert not view.is_contiguous()
    return view


def _inputs(device, dtype, layout):
    boxes = _layout(torch.tensor(BOXES, dtype=dtype, device=device), layout)
    scores = _layout(torch.tensor(SCORES, dtype=dtype, device=device), layout)
    labels = _layout(torch.tensor(LABELS, device=device), layout)
    return boxes, scores, labels


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_box_iou_rotated(device, dtype, layout):
    boxes, _, _ = _inputs(device, dtype, layout)
    for aligned in (False, True):
        torch.library.opcheck(IOU, (boxes, boxes.flip(0), aligned))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_nms_rotated(device, dtype, layout):
    boxes, scores, labels = _inputs(device, dtype, layout)
    torch.library.opcheck(NMS, (boxes, scores, None, 0.3))
    torch.library.opcheck(NMS, (boxes, scores, labels, 0.3))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES + [torch.float16])
@pytest.mark.parametrize("device", DEVICES)
def test_the_operators_called_directly_answer_like_contiguous_input(device, dtype, layout):
    boxes, scores, labels = _inputs(device, dtype, layout)
    want_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    plain_boxes, plain_scores = boxes.to(want_dtype).contiguous(), scores.to(want_dtype).contiguous()
    iou = IOU(boxes, boxes, False)
    assert iou.dtype == want_dtype and iou.device == boxes.device
    torch.testing.assert_close(iou, box_iou_rotated(plain_boxes, plain_boxes), rtol=0, atol=0)
    torch.testing.assert_close(IOU(boxes, boxes.flip(0), True), box_iou_rotated(plain_boxes, plain_boxes.flip(0), True),
                               rtol=0, atol=0)
    assert NMS(boxes, scores, None, 0.3).tolist() == nms_rotated(plain_boxes, plain_scores, 0.3).tolist() == [4, 0, 2]
    assert NMS(boxes, scores, labels, 0.3).tolist() == [4, 0, 2, 3]


@pytest.mark.parametrize("dtype", DTYPES + [torch.float16])
@pytest.mark.parametrize("device", DEVICES)
def test_fake_kernels_report_the_real_dtypes_and_shapes(device, dtype):
    boxes, scores, labels = _inputs(device, dtype, "contiguous")
    real = [IOU(boxes, boxes[:2], False), IOU(boxes, boxes, True), NMS(boxes, scores, labels, 0.3)]
    with FakeTensorMode(shape_env=ShapeEnv()) as mode:
        fb, fs, fl = (mode.from_tensor(t) for t in (boxes, scores, labels))
        fake = [IOU(fb, fb[:2], False), IOU(fb, fb, True), NMS(fb, fs, fl, 0.3)]
    for r, f in zip(real[:2], fake[:2]):
        assert (f.dtype, tuple(f.shape), f.device) == (r.dtype, tuple(r.shape), r.device)
    nms_fake = fake[2]
    assert (nms_fake.dtype, nms_fake.dim(), nms_fake.device) == (torch.int64, 1, real[2].device)
    assert isinstance(nms_fake.shape[0], torch.SymInt)  # the number kept depends on the data


@pytest.mark.parametrize(
    "op, args, error, match",
    [
        (IOU, (torch.zeros(3, 4), torch.zeros(1, 5), False), ValueError, r"boxes1 must have shape \(N, 5\)"),
        (IOU, (torch.zeros(2, 5), torch.zeros(3, 5), True), ValueError, "equal length"),
        (IOU, (torch.zeros(1, 5, dtype=torch.int64), torch.zeros(1, 5), False), TypeError, "floating-point"),
        (IOU, (torch.tensor([[0.0, 0, float("nan"), 1, 0]]), torch.zeros(1, 5), False), ValueError,
         "boxes1 contains NaN or inf"),
        (NMS, (torch.zeros(2, 5), torch.zeros(3), None, 0.5), ValueError, r"scores must have shape \(2,\)"),
        (NMS, (torch.zeros(2, 5), torch.zeros(2), torch.zeros(2), 0.5), TypeError, "labels must be an integer"),
        (NMS, (torch.zeros(2, 5), torch.zeros(2), None, 1.5), ValueError, r"iou_threshold must be in \[0, 1\]"),
        (NMS, (torch.zeros(2, 5), torch.tensor([0.1, float("inf")]), None, 0.5), ValueError, "scores contains NaN"),
        (PADDED, (torch.zeros(2, 5), torch.zeros(2), None, 1.5, -1), ValueError, r"iou_threshold must be in \[0, 1\]"),
        (PADDED, (torch.zeros(2, 5), torch.zeros(3), None, 0.5, -1), ValueError, r"scores must have shape \(2,\)"),
        (PADDED, (torch.zeros(2, 5), torch.zeros(2), torch.zeros(2), 0.5, -1), TypeError, "labels must be an integer"),
        (PADDED, (torch.zeros(2, 4), torch.zeros(2), None, 0.5, -1), ValueError, r"boxes must have shape \(N, 5\)"),
        (CROP, ([FRAME], CROP_BOXES, 8, 8, True, 0.0, [0.0] * 3, [0, 1, 2], True, "sideways", torch.uint8, True),
         ValueError, "reading must be one of"),
        (CROP, ([FRAME], CROP_BOXES, 0, 8, True, 0.0, [0.0] * 3, [0, 1, 2], True, "as-is", torch.uint8, True),
         ValueError, "out_h"),
        (CROP, ([FRAME], CROP_BOXES, 8, 8, True, 0.0, [0.0] * 2, [0, 1, 2], True, "as-is", torch.uint8, True),
         ValueError, r"fill must hold one value per output channel \(3\)"),
        (CROP, ([FRAME], CROP_BOXES, 8, 8, True, 0.0, [0.0] * 3, [0, 1, 5], True, "as-is", torch.uint8, True),
         ValueError, "channels"),
        (CROP, ([FRAME], CROP_BOXES, 8, 8, True, 0.0, [0.0] * 3, [0, 1, 2], True, "as-is", torch.int32, True),
         TypeError, "out_dtype must be"),
        (CROP, ([FRAME], CROP_BOXES[:, :5], 8, 8, True, 0.0, [0.0] * 3, [0, 1, 2], True, "as-is", torch.uint8, True),
         ValueError, r"boxes must have shape \(K, 6\)"),
        (CROP, ([FRAME], CROP_BOXES, 8, 8, True, -1.0, [0.0] * 3, [0, 1, 2], True, "as-is", torch.uint8, True),
         ValueError, "padding"),
        (YOLO, (HEAD, 2.0, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1), ValueError,
         r"conf must be in \[0, 1\], got 2.0"),
        (YOLO, (HEAD, 0.25, float("nan"), 10, None, False, False, 100, 1.0, 0.0, 0.0, -1), ValueError,
         r"iou must be in \[0, 1\], got nan"),
        (YOLO, (HEAD, 0.25, 0.5, -1, None, False, False, 100, 1.0, 0.0, 0.0, -1), ValueError, "max_det"),
        (YOLO, (HEAD, 0.25, 0.5, 10, None, False, False, 0, 1.0, 0.0, 0.0, -1), ValueError, "max_nms"),
        (YOLO, (HEAD, 0.25, 0.5, 10, None, False, False, 100, 0.0, 0.0, 0.0, -1), ValueError,
         "scale must be a positive finite number"),
        (YOLO, (HEAD, 0.25, 0.5, 10, None, False, False, 100, 1.0, float("inf"), 0.0, -1), ValueError,
         "pad_x must be a finite number"),
        (YOLO, (HEAD[:, :5], 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1), ValueError,
         r"output must be a floating-point \(B, 4\+nc\+1, N\) head"),
        (YOLO, (HEAD, 0.25, 0.5, 10, torch.ones(3), False, False, 100, 1.0, 0.0, 0.0, -1), ValueError,
         "allowed must be None or an"),
        (YOLO, (HEAD, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1, torch.full((3,), 0.5)), ValueError,
         r"class_iou must be None or an \(3,\) float64 tensor"),
        (YOLO, (HEAD, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1,
                torch.full((2,), 0.5, dtype=torch.float64)), ValueError, r"class_iou must be None or an \(3,\)"),
        (YOLO, (HEAD, 0.25, 0.5, 10, None, False, True, 100, 1.0, 0.0, 0.0, -1,
                torch.full((3,), 0.5, dtype=torch.float64)), ValueError, "class_iou .* needs class-aware NMS"),
        (YOLO, (HEAD, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1, None,
                torch.full((3,), 0.5, dtype=torch.float64)), ValueError,
         r"class_conf must be None or an \(3,\) float32"),
    ],
)
def test_the_operators_called_directly_refuse_bad_input_with_the_wrappers_messages(op, args, error, match):
    with pytest.raises(error, match=match):
        op(*args)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_box_iou_rotated_traces_with_fullgraph(device, dynamic):
    torch._dynamo.reset()
    boxes, _, _ = _inputs(device, torch.float32, "contiguous")
    compiled = torch.compile(box_iou_rotated, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    torch.testing.assert_close(compiled(boxes, boxes[:3]), box_iou_rotated(boxes, boxes[:3]), rtol=0, atol=0)
    torch.testing.assert_close(compiled(boxes, boxes.flip(0), True), box_iou_rotated(boxes, boxes.flip(0), True),
                               rtol=0, atol=0)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_nms_rotated_traces_with_fullgraph(device, dynamic):
    torch._dynamo.reset()
    boxes, scores, labels = _inputs(device, torch.float32, "contiguous")

    def keep_boxes(boxes, scores, labels):
        return boxes[nms_rotated(boxes, scores, 0.3, labels=labels)]  # the data-dependent size flows on

    compiled = torch.compile(keep_boxes, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    torch.testing.assert_close(compiled(boxes, scores, labels), keep_boxes(boxes, scores, labels), rtol=0, atol=0)
    torch.testing.assert_close(compiled(boxes, scores, None), keep_boxes(boxes, scores, None), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_functions_still_refuse_nan(device):
    torch._dynamo.reset()
    bad = torch.tensor([[0.0, 0.0, float("nan"), 1.0, 0.0]], device=device)
    with pytest.raises(ValueError, match="boxes1 contains NaN or inf"):
        torch.compile(box_iou_rotated, fullgraph=True, backend="aot_eager")(bad, bad)
    with pytest.raises(ValueError, match="boxes contains NaN or inf"):
        torch.compile(nms_rotated, fullgraph=True, backend="aot_eager")(bad, torch.ones(1, device=device), 0.5)


NMS_PADDED = torch.ops.obbmeta.nms_rotated_padded.default
DECODE_PADDED = torch.ops.obbmeta.yolo_obb_padded.default


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_nms_rotated_padded(device, dtype, layout):
    boxes, scores, labels = _inputs(device, dtype, layout)
    torch.library.opcheck(NMS_PADDED, (boxes, scores, None, 0.3, -1))
    torch.library.opcheck(NMS_PADDED, (boxes, scores, labels, 0.3, 100))
    keep, count = NMS_PADDED(boxes, scores, labels, 0.3, -1)
    assert keep.tolist() == [4, 0, 2, 3, -1] and int(count) == 4


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_yolo_obb_padded(device):
    # (B=2, 4 + 2 classes + 1, 6 anchors): two overlapping class-0 anchors and a class-1 anchor in image 0.
    head = torch.zeros(2, 7, 6, device=device)
    head[0, :4, :3] = torch.tensor([[10.0, 10.5, 40.0], [10.0, 10.0, 40.0], [8.0, 8.0, 6.0], [4.0, 4.0, 6.0]])
    head[0, 4, :2] = torch.tensor([0.9, 0.8])
    head[0, 5, 2] = 0.7
    allowed = torch.ones(2, dtype=torch.int32, device=device)
    table = torch.tensor([0.5, 0.1], dtype=torch.float64, device=device)
    confs = torch.tensor([0.85, 0.5], dtype=torch.float32, device=device)
    for args in ((head, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1),
                 (head, 0.25, 0.5, 1, allowed, True, True, 2, 0.5, 3.0, 1.0, -1),
                 (head, 0.25, 0.5, 10, allowed, True, False, 100, 1.0, 0.0, 0.0, -1, table),
                 (head, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1, None, confs)):
        torch.library.opcheck(DECODE_PADDED, args)
    # a per-class table: class 0 at 0.99 keeps both of its overlapping anchors, at the default 0.5 one
    loose = torch.tensor([0.99, 0.5], dtype=torch.float64, device=device)
    assert DECODE_PADDED(head, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1, loose)[3].tolist() == [3, 0]
    # a per-class score table: class 0 above 0.85 only, so its 0.8 anchor goes (its other class scores are 0)
    assert DECODE_PADDED(head, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1, None,
                         confs)[3].tolist() == [2, 0]
    boxes, scores, labels, counts, status, needed = DECODE_PADDED(head, 0.25, 0.5, 10, None, False, False, 100, 1.0,
                                                                  0.0, 0.0, -1)
    assert counts.tolist() == [2, 0] and labels[0, :2].tolist() == [0, 1] and int(status) == 0
    # the pool entries the data needed (what yolo_obb sizes a second run by): the CPU kernel needs none
    assert needed.dim() == 0 and needed.dtype == torch.int64 and int(needed) >= 0
    assert device != "cpu" or int(needed) == 0
    assert boxes.shape == (2, 10, 5) and scores[0, :2].tolist() == pytest.approx([0.9, 0.7])


DIRECT = "tests/ops/test_op_contract.py::test_the_operators_called_directly_refuse_bad_input_with_the_wrappers_messages"
# Every operator of the registry and where its contract is proved: an opcheck test and a test of its direct refusals.
CONTRACT = {
    "box_iou_rotated": ("tests/ops/test_op_contract.py::test_opcheck_box_iou_rotated", DIRECT),
    "nms_rotated": ("tests/ops/test_op_contract.py::test_opcheck_nms_rotated", DIRECT),
    "nms_rotated_padded": ("tests/ops/test_op_contract.py::test_opcheck_nms_rotated_padded", DIRECT),
    "yolo_obb_padded": ("tests/ops/test_op_contract.py::test_opcheck_yolo_obb_padded", DIRECT),
    "crop_rotated": ("tests/ops/test_crop_rotated.py::test_opcheck_crop_rotated", DIRECT),
    "draw_outlines_batch": ("tests/osd/test_draw_obbs.py::test_opcheck_draw_outlines_batch",
                            "tests/osd/test_draw_obbs.py::test_the_draw_operator_refuses_what_its_kernels_cannot_take"),
}


def test_every_registered_operator_has_an_opcheck_and_a_refusal_test():
    """A new ``obbmeta::`` operator (wherever its module registers it) fails here until its contract tests exist."""
    import ast
    from pathlib import Path

    import obbmeta.osd.draw  # noqa: F401  (registers obbmeta::draw_outlines_batch)

    registered = {n.split("::", 1)[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("obbmeta::")}
    assert registered == set(CONTRACT)
    root = Path(__file__).resolve().parents[2]
    for op, tests in CONTRACT.items():
        for test in tests:
            path, name = test.split("::")
            defined = {n.name for n in ast.walk(ast.parse((root / path).read_text())) if isinstance(n, ast.FunctionDef)}
            assert name in defined, f"{op}: {test} does not exist"
            source = (root / path).read_text()
            assert op in source, f"{op} is not named in {path}"


@pytest.mark.parametrize("device", DEVICES)
def test_no_operator_output_requires_grad_and_a_backward_through_one_fails_loudly(device):
    """The pure operators have no autograd formula (obbmeta.ops.registry): with inputs that require grad, their outputs
    do not (also where a CPU kernel builds them with torch ops from the inputs), so a backward stops with torch's own
    error instead of passing a zero or partial gradient."""
    boxes, scores, labels = _inputs(device, torch.float32, "contiguous")
    boxes, scores = boxes.clone().requires_grad_(), scores.clone().requires_grad_()
    head = HEAD.to(device).clone().requires_grad_()
    outputs = [IOU(boxes, boxes, False), NMS(boxes, scores, labels, 0.3), *PADDED(boxes, scores, None, 0.3, -1),
               *YOLO(head, 0.25, 0.5, 10, None, False, False, 100, 1.0, 0.0, 0.0, -1),
               *CROP([FRAME.to(device).float().requires_grad_()], CROP_BOXES.to(device), 4, 4, False, 0.0, [0.0] * 3,
                     [0, 1, 2], False, "as-is", torch.float32, True)]
    assert [t.requires_grad for t in outputs] == [False] * len(outputs)
    iou = IOU(boxes, boxes, False)
    with pytest.raises(RuntimeError, match="does not require grad"):
        iou.sum().backward()
    assert boxes.grad is None
