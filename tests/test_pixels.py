"""obbmeta.frames.pixels: the format table against NVIDIA's header, and to_rgb of every format against references
written here from the ITU tables (and OpenCV's cvtColor where it has the conversion), pixel for pixel, with pitched
planes, on the CPU and on CUDA."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
from devices import DEVICES
from hypothesis import given, settings
from hypothesis import strategies as st
from pixel_refs import PLANAR, SEMI, as_frame, describe, frame_and_reference, levels, up

from obbmeta.frames import pixels
from obbmeta.frames.pixels import FORMATS, to_rgb

try:
    import cv2
except ImportError:  # the OpenCV comparisons are skipped; the ITU references run everywhere
    cv2 = None
needs_opencv = pytest.mark.skipif(cv2 is None, reason="needs OpenCV (opencv-python-headless)")

# ---------------------------------------------------------------- facts written here, independently of obbmeta

# A few NvBufSurfaceColorFormat values, counted in includes/nvbufsurface.h (NVIDIA/DeepStream v9.1.0).
HEADER_VALUES = {"GRAY8": 1, "YUV420": 2, "YVU420": 3, "NV12": 6, "NV12_ER": 7, "NV21": 8, "UYVY": 10, "YUYV": 14,
                 "RGBA": 19, "BGRx": 24, "RGB": 27, "BGR": 28, "NV12_10LE": 29, "YUV420_709": 31, "NV12_709": 33,
                 "NV12_709_ER": 34, "NV12_2020": 36, "NV12_10LE_709": 38, "NV12_10LE_2020": 40, "R8_G8_B8": 42,
                 "YUV422": 46, "NV16": 50, "NV24": 52, "RGBA_10_10_10_2_709": 64, "UYVP": 69, "GRAY8_ER": 88,
                 "UYVY_709": 89, "GRAY16_LE": 92, "BGRA64_LE": 93, "NV24_2020": 104, "UYVP_2020": 112}
# What NVIDIA's elements offer (the caps strings in the wheel's libgstnvvideo4linux2.so / libgstnvvideoconvert.so
# and nvstreammux's sources, DeepStream 9.1), 8- and 10-bit formats obbmeta must read.
DECODER_EMITS = ("I420", "NV12", "P010_10LE", "Y444", "NV24", "NV16")
CONVERTER_EMITS = ("I420", "NV12", "P010_10LE", "BGRx", "RGBA", "Y444", "GRAY8", "GRAY16_LE", "RGB", "BGR",
                   "BGR10A2_LE", "RGB10A2_LE", "UYVP", "UYVY", "BGRA64_LE")
MUX_EMITS = ("NV12", "RGBA", "I420")

# ---------------------------------------------------------------- the table

def test_nvbuf_ids_are_the_values_of_nvidias_header():
    for name, value in HEADER_VALUES.items():
        assert FORMATS[name].nvbuf_id == value and pixels.NVBUF_COLOR_FORMATS[value] == name
        assert pixels.from_nvbuf(value).name == name
    for fmt in FORMATS.values():  # names without an id are the matrix / range combinations DeepStream lacks
        assert (fmt.nvbuf_id is None) == (fmt.name not in pixels.NVBUF_COLOR_FORMATS)


def test_every_value_of_the_enum_is_read_or_refused_with_its_reason():
    for value, name in enumerate(pixels.NVBUF_COLOR_FORMATS):
        if name in pixels.UNREAD:
            with pytest.raises(pixels.UnreadFormatError, match=f"colour format {value} .NVBUF_COLOR_FORMAT_{name}."):
                pixels.from_nvbuf(value)
        else:
            assert pixels.from_nvbuf(value).name == name
    for value in (-1, len(pixels.NVBUF_COLOR_FORMATS), 10 ** 6):
        with pytest.raises(pixels.UnreadFormatError, match="no NvBufSurfaceColorFormat"):
            pixels.from_nvbuf(value)


def test_the_formats_nvidias_elements_emit_are_read():
    for caps in DECODER_EMITS + CONVERTER_EMITS + MUX_EMITS:
        assert caps in pixels.CAPS_FORMATS, caps
    # the decoder's NV12 at HD sizes (issue 18): colour format 33
    assert pixels.from_nvbuf(33).name == "NV12_709" and pixels.from_nvbuf(33).caps == "NV12"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_format_names_its_matrix_and_range(name):
    fmt = FORMATS[name]
    base, matrix, full = describe(name)
    if fmt.family == "yuv":
        assert (fmt.matrix, fmt.full_range) == (f"BT.{matrix}", full)
    assert fmt.caps in pixels.CAPS_FORMATS
    assert len(fmt.shapes(8, 6)) == len(fmt.planes)


@pytest.mark.parametrize("caps,colorimetry,want", [
    ("NV12", ("BT.601", False), "NV12"), ("NV12", ("BT.709", False), "NV12_709"), ("NV12", ("BT.709", True),
                                                                                  "NV12_709_ER"),
    ("NV12", ("BT.2020", True), "NV12_2020_ER"), ("I420", (None, None), "YUV420"), ("YV12", ("BT.709", True),
                                                                                    "YVU420_709_ER"),
    ("YUY2", ("BT.709", False), "YUYV_709"), ("P010_10LE", ("BT.2020", False), "NV12_10LE_2020"),
    ("GRAY8", (None, None), "GRAY8_ER"), ("GRAY8", (None, False), "GRAY8"), ("RGBA", ("BT.709", False), "RGBA"),
])
def test_system_memory_caps_resolve_to_the_format_their_colorimetry_names(caps, colorimetry, want):
    assert pixels.from_gst(caps, *colorimetry).name == want


def test_rgb10a2_caps_take_the_primaries():
    assert pixels.from_gst("RGB10A2_LE", primaries="BT.2020").name == "RGBA_10_10_10_2_2020"
    assert pixels.from_gst("BGR10A2_LE").name == "BGRA_10_10_10_2_709"


@pytest.mark.parametrize("caps,matrix,match", [("NV12", "SMPTE240M", "SMPTE240M matrix"), ("NV12_10LE32", None,
                                                                                           "not read by obbmeta")])
def test_system_memory_caps_obbmeta_cannot_read_are_refused(caps, matrix, match):
    with pytest.raises(pixels.UnreadFormatError, match=match):
        pixels.from_gst(caps, matrix)


# ---------------------------------------------------------------- to_rgb against the references

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_to_rgb_equals_the_itu_reference(name, device):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for h, w in ((12, 16), (7, 10), (1, 2)):  # odd heights: the last chroma row serves one luma row
        planes, ref = frame_and_reference(name, h, w, rng)
        got = to_rgb(as_frame(planes, device), name)
        assert got.shape == (3, h, w) and got.dtype == torch.float32 and got.device.type == device
        assert levels(got, ref) <= 0.5, (name, h, w)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(FORMATS)), h=st.integers(1, 11), half_w=st.integers(1, 6),
       odd=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_to_rgb_equals_the_itu_reference_at_any_size(name, h, half_w, odd, seed):
    w = 2 * half_w - (odd and FORMATS[name].packing not in ("yuv422", "uyvp"))
    planes, ref = frame_and_reference(name, h, w, np.random.default_rng(seed))
    assert levels(to_rgb(as_frame(planes, "cpu"), name), ref) <= 0.5


OPENCV = {  # format -> what OpenCV's cvtColor does with the frame's bytes (601 limited: its YUV420 / 422 codes)
    "NV12": lambda p, h, w: cv2.cvtColor(np.concatenate([p[0][..., 0], p[1].reshape(h // 2, w)]),
                                         cv2.COLOR_YUV2RGB_NV12),
    "NV21": lambda p, h, w: cv2.cvtColor(np.concatenate([p[0][..., 0], p[1].reshape(h // 2, w)]),
                                         cv2.COLOR_YUV2RGB_NV21),
    "YUV420": lambda p, h, w: cv2.cvtColor(np.concatenate([p[0][..., 0], p[1].reshape(h // 4, w), p[2].reshape(
        h // 4, w)]), cv2.COLOR_YUV2RGB_I420),
    "YVU420": lambda p, h, w: cv2.cvtColor(np.concatenate([p[0][..., 0], p[1].reshape(h // 4, w), p[2].reshape(
        h // 4, w)]), cv2.COLOR_YUV2RGB_YV12),
    "UYVY": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_YUV2RGB_UYVY),
    "YUYV": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_YUV2RGB_YUY2),
    "YVYU": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_YUV2RGB_YVYU),
    # V Y0 U Y1 with each pixel's two bytes swapped is Y0 V Y1 U
    "VYUY": lambda p, h, w: cv2.cvtColor(np.ascontiguousarray(p[..., ::-1]), cv2.COLOR_YUV2RGB_YVYU),
    "GRAY8_ER": lambda p, h, w: cv2.cvtColor(p[0][..., 0], cv2.COLOR_GRAY2RGB),
    "RGBA": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_RGBA2RGB),
    "BGRA": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_BGRA2RGB),
    "BGRx": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_BGRA2RGB),
    "BGR": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_BGR2RGB),
    "RGB": lambda p, h, w: p,
    "BGRA64_LE": lambda p, h, w: cv2.cvtColor(p, cv2.COLOR_BGRA2RGB) / 257.0,
}


def full_range_601_by_opencv(name, planes, h, w):
    """OpenCV's JPEG (BT.601 full range) YCrCb -> RGB of the chroma-upsampled frame."""
    base = name[:-3]
    if base in SEMI:
        sx, sy, order = SEMI[base]
        c = planes[1] if order == "UV" else planes[1][..., ::-1]
        cb, cr = c[..., 0], c[..., 1]
    elif base in PLANAR:
        sx, sy, order = PLANAR[base]
        cb, cr = (planes[1][..., 0], planes[2][..., 0]) if order == "UV" else (planes[2][..., 0], planes[1][..., 0])
    else:
        return None
    ycrcb = np.stack([planes[0][..., 0], up(cr, sy, sx, h, w), up(cb, sy, sx, h, w)], -1)
    return cv2.cvtColor(np.ascontiguousarray(ycrcb), cv2.COLOR_YCrCb2RGB)


@needs_opencv
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(OPENCV) + ["NV12_ER", "NV21_ER", "YUV420_ER", "YVU420_ER", "NV16_ER",
                                                    "YUV444_ER", "NV24_ER"])
def test_to_rgb_agrees_with_opencv(name, device):
    h, w = 16, 24
    planes, _ = frame_and_reference(name, h, w, np.random.default_rng(5))
    if FORMATS[name].family == "yuv" and not name.endswith("_ER"):
        # codes of real video (OpenCV clamps Y - 16 at 0 before its matrix: it differs below black)
        planes = np.clip(planes, 16, 235) if isinstance(planes, np.ndarray) else tuple(np.clip(p, 16, 235)
                                                                                       for p in planes)
    want = OPENCV[name](planes, h, w) if name in OPENCV else full_range_601_by_opencv(name, planes, h, w)
    got = to_rgb(as_frame(planes, device), name).permute(1, 2, 0).cpu().numpy() * 255
    assert np.abs(got - want.astype(np.float64)).max() <= 2.0, name


def test_the_matrices_give_visibly_different_rgb():
    rng = np.random.default_rng(1)
    planes, _ = frame_and_reference("NV12", 16, 16, rng)
    frame = tuple(torch.from_numpy(p) for p in planes)
    out = {name: to_rgb(frame, name) * 255 for name in ("NV12", "NV12_709", "NV12_2020", "NV12_ER")}
    for a in out:
        for b in out:
            if a < b:
                assert float((out[a] - out[b]).abs().max()) > 10, (a, b)


def test_a_pixel_format_object_works_as_its_name():
    planes, ref = frame_and_reference("NV12_709", 4, 6, np.random.default_rng(2))
    assert levels(to_rgb(as_frame(planes, "cpu"), FORMATS["NV12_709"]), ref) <= 0.5


# ---------------------------------------------------------------- bad frames: clear errors naming the argument

def nv12(h=8, w=10):
    return torch.zeros(h, w, 1, dtype=torch.uint8), torch.zeros(h // 2, w // 2, 2, dtype=torch.uint8)


@pytest.mark.parametrize("frame,fmt,error,match", [
    (torch.rand(6, 8, 4), "RGBA", TypeError, r"frame must be a uint8 tensor .*got float32 \(float frames are not"),
    (torch.zeros(6, 8, 4, dtype=torch.int16), "RGBA", TypeError, "frame must be a uint8 tensor .*got int16"),
    ((torch.zeros(8, 10, 1, dtype=torch.int16), nv12()[1]), "NV12", TypeError, r"frame\[0\] \(the Y plane"),
    ((nv12()[0], torch.zeros(4, 5, 3, dtype=torch.uint8)), "NV12", ValueError,
     r"frame\[1\] \(the UV plane of format NV12\) must be a \(rows, cols, 2\) tensor, got shape \(4, 5, 3\)"),
    ((nv12()[0], torch.zeros(2, 5, 2, dtype=torch.uint8)), "NV12", ValueError, "must have 4 rows and 5 columns"),
    ((nv12()[0],), "NV12", ValueError, r"the 2 planes \(Y, UV\) of format NV12, got 1"),
    (nv12(), "RGBA", TypeError, r"frame must be a tensor \(format RGBA is packed"),
    (torch.zeros(6, 8, 3, dtype=torch.uint8), "RGBA", ValueError, r"\(rows, cols, 4\) tensor, got shape \(6, 8, 3\)"),
    (torch.zeros(6, 7, 2, dtype=torch.uint8), "UYVY", ValueError, "even width"),
    ((torch.zeros(8, 10, 1, dtype=torch.uint8), torch.zeros(4, 5, 2, dtype=torch.uint8)), "NV12_10LE", TypeError,
     "must be a uint16 tensor"),
    ([torch.zeros(8, 10, dtype=torch.uint8), "chroma"], "NV12", TypeError, r"frame\[1\] .*got str"),
])
def test_bad_frames_are_refused_naming_the_argument(frame, fmt, error, match):
    with pytest.raises(error, match=match):
        to_rgb(frame, fmt)


@pytest.mark.parametrize("name,match", [("NV12_12LE", "12-bit video"), ("YUV444_10LE", "documented nowhere"),
                                        ("I420", "GStreamer caps name.*YUV420"), ("nv12", "must be one of"),
                                        (33, "must be one of")])
def test_unknown_or_unread_format_names_are_refused(name, match):
    with pytest.raises(ValueError, match=match):
        to_rgb(torch.zeros(4, 4, 4, dtype=torch.uint8), name)


def test_an_implausible_frame_size_is_refused_before_anything_is_allocated():
    huge = torch.zeros(1, 1, 4, dtype=torch.uint8).expand(60000, 60000, 4)  # a view: no memory behind it
    with pytest.raises(ValueError, match="frame width must be an int in 1..16384 pixels, got 60000"):
        to_rgb(huge, "RGBA")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_planes_on_two_devices_are_refused():
    y, uv = nv12()
    with pytest.raises(ValueError, match="must share a device"):
        to_rgb((y, uv.cuda()), "NV12")


def test_docs_list_every_colour_format_and_every_refusal():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "frames.md").read_text()
    for value, fmt in pixels.BY_NVBUF_ID.items():
        assert f"| {value} | `{fmt.name}` | {fmt.caps} |" in text, fmt.name
    for name in pixels.UNREAD:
        assert f"{pixels.NVBUF_COLOR_FORMATS.index(name)} `{name}`" in text, name


PACKED_422 = [f for f in sorted(FORMATS) if FORMATS[f].packing in ("yuv422", "uyvp")]
EVEN_WIDTH = r"frame must have an even width \(format {} is packed 4:2:2\), got 5"


@pytest.mark.parametrize("name", PACKED_422)
def test_every_packed_422_format_refuses_an_odd_width_with_one_message(name):
    fmt = FORMATS[name]
    if fmt.packing == "yuv422":  # a tensor of 5 two-byte pixels: refused where it is read
        with pytest.raises(ValueError, match=EVEN_WIDTH.format(name)):
            to_rgb(torch.zeros(4, 5, 2, dtype=torch.uint8), name)
        return
    # UYVP's tensor holds whole five-byte pixel pairs, so a 5-wide frame has no tensor form: its planes' shape and
    # row size (what a buffer's plane is checked against) are refused with the same words, not sized for 3 pairs.
    for size in (lambda: fmt.shapes(5, 4), lambda: fmt.planes[0].shape(5, 4), lambda: fmt.planes[0].row_bytes(5)):
        with pytest.raises(ValueError, match=EVEN_WIDTH.format("UYVP")):
            size()
    assert fmt.shapes(6, 4) == ((4, 3, 5),) and fmt.planes[0].row_bytes(6) == 15


def test_frame_sizes_checks_each_kind_of_frame_once_and_still_refuses_a_bad_one():
    good = [torch.zeros(4, 6, 4, dtype=torch.uint8) for _ in range(3)]
    nv12 = (torch.zeros(8, 10, 1, dtype=torch.uint8), torch.zeros(4, 5, 2, dtype=torch.uint8))
    frames = [good[0], nv12, good[1], good[2], nv12]
    formats = ["RGBA", "NV12", "RGBA", "RGBA", "NV12"]
    assert pixels.frame_sizes(frames, formats) == [pixels.frame_size(f, m) for f, m in zip(frames, formats)]
    assert pixels.frame_sizes(frames, formats) == [(6, 4), (10, 8), (6, 4), (6, 4), (10, 8)]
    bad = torch.zeros(4, 6, 3, dtype=torch.uint8)  # three channels for RGBA: a kind not seen before, checked
    with pytest.raises(ValueError, match=r"must be a \(rows, cols, 4\) tensor"):
        pixels.frame_sizes([good[0], bad], ["RGBA", "RGBA"])
    with pytest.raises(TypeError, match="must be a uint8 tensor"):
        pixels.frame_sizes([good[0], good[1].to(torch.int16)], ["RGBA", "RGBA"])
