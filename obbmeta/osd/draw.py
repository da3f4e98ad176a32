"""Rasterise rotated-box outlines straight into an image tensor (CPU or CUDA), in place."""
from __future__ import annotations

import ctypes
from typing import List, Optional, Sequence, Union

import torch

from .._cuda_lib import cuda_library, launch
from .._native import NativeLibrary, ptr
from .._validators import box_tensor, number_in_range
from ..boxes import OrientedBoxes
from ..ops import registry
from ..palette import PALETTE_RGB

# Outline width limit: the cost of a box grows with thickness squared (up to the whole image per edge).
MAX_THICKNESS = 256


_i32, _i64, _p = ctypes.c_int, ctypes.c_int64, ctypes.c_void_p
DRAW = NativeLibrary(
    "_draw", "C draw core", abi=1, abi_function="obbmeta_draw_abi_version",
    functions={"obbmeta_draw_outlines": (None, [_p, _i32, _i32, _i32, _i64, _p, _i64, _p, ctypes.c_double])})


def _host() -> ctypes.CDLL:
    return DRAW.load()


def draw_obbs(
    image: torch.Tensor,
    boxes: Union[OrientedBoxes, torch.Tensor],
    colors: Optional[Union[Sequence[int], torch.Tensor]] = None,
    thickness: float = 2,
) -> torch.Tensor:
    """Draw the outlines of rotated boxes into ``image``, in place, and return it.

    A pixel (x, y) is painted when its centre (x + 0.5, y + 0.5) lies within ``thickness / 2`` of an edge of a
    box; boxes are painted in order, so a later box is on top where outlines cross. The CPU (C) and CUDA paths
    run the same code (``kernels/obb_draw.h``) and give identical pixels. Parts outside the image are clipped;
    a box with a zero side is drawn as a line (or a dot); huge and far-away boxes are fine; a box with a NaN or
    inf value is not drawn (no error: checking would cost a GPU sync per frame). On CUDA nothing here waits for
    the GPU: the kernels are queued on torch's current stream.

    Args:
        image: (H, W, 3) or (H, W, 4) uint8 tensor on the CPU or a CUDA device, pixels contiguous (rows may be
            padded, e.g. a crop or a pitched surface). Colours are written in the image's channel order.
        boxes: :class:`OrientedBoxes` (torch- or NumPy-backed) or an (N, 5) [cx, cy, w, h, angle] tensor in the
            image's pixels.
        colors: None (per-class palette from ``boxes.labels``, or the first palette colour for a plain tensor),
            one colour (3 or 4 ints, applied to every box), or an (N, 3|4) uint8/int tensor. With 4 channels and
            3-value colours, alpha is set to 255.
        thickness: line width in pixels, in (0, 256]. The work is bounded per box: each edge tests at most
            (its length inside the image + thickness) x 1.5 thickness pixels, and never more than the image.
    """
    height, width, channels = _check_image("image", image)
    _check_thickness(thickness)
    if isinstance(boxes, OrientedBoxes) and not isinstance(boxes.xywhr, torch.Tensor):
        boxes = boxes.to(image.device)  # NumPy-backed, as the metadata readers give them
    labels = boxes.labels if isinstance(boxes, OrientedBoxes) else None
    raw = boxes.xywhr if isinstance(boxes, OrientedBoxes) else boxes
    # The rasteriser reads float32 boxes (pixel coordinates need no more); float64 input is narrowed here.
    xywhr = box_tensor("boxes", raw).to(device=image.device, dtype=torch.float32).contiguous()
    n = xywhr.shape[0]
    rgba = _colors(colors, labels, n, channels, image.device)
    if n == 0 or height == 0 or width == 0:
        return image
    if image.device.type == "cpu":
        _host().obbmeta_draw_outlines(ptr(image), height, width, channels, image.stride(0), ptr(xywhr), n,
                                      ptr(rgba), float(thickness))
    elif image.device.type == "cuda":
        lib = cuda_library()
        if lib is None:  # kernels not built: draw on a host copy
            host = image.cpu()
            draw_obbs(host, xywhr.cpu(), rgba.cpu(), thickness)
            image.copy_(host)
            return image
        draw_outlines_batch_op([image], xywhr, [0, n], rgba, float(thickness))
    else:
        raise ValueError(f"image must be on the CPU or a CUDA device, got {image.device}")
    return image


def _check_image(name: str, image: torch.Tensor) -> tuple[int, int, int]:
    """(height, width, channels) of an (H, W, 3|4) uint8 image with contiguous pixels, or the error naming it."""
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (H, W, 3|4), got {type(image).__name__}")
    if image.dim() != 3 or image.shape[2] not in (3, 4):
        raise ValueError(f"{name} must have shape (H, W, 3) or (H, W, 4), got {tuple(image.shape)}")
    if image.dtype != torch.uint8:
        raise TypeError(f"{name} must be uint8, got {image.dtype}")
    height, width, channels = image.shape
    if image.stride(2) != 1 or image.stride(1) != channels or image.stride(0) < width * channels:
        raise ValueError(f"{name} must have contiguous pixels (stride (row, channels, 1)); use .contiguous()")
    return height, width, channels


def draw_obbs_batch(images: Sequence[torch.Tensor], boxes: torch.Tensor, offsets: Sequence[int], colors: torch.Tensor,
                    thickness: float = 2) -> None:
    """:func:`draw_obbs` of several images at once, in place: rows ``offsets[k]:offsets[k + 1]`` of ``boxes`` (an
    (N, 5) tensor in image k's pixels) are drawn into ``images[k]`` in the colours of the same rows of ``colors``
    ((N, channels) uint8). The images are on one device, all with 3 or all with 4 channels. The pixels are those
    of :func:`draw_obbs` on each image (tested); on CUDA one pair of launches draws up to 64 images (obboverlay's
    batch), on the CPU the same C code runs image after image."""
    if not isinstance(images, (list, tuple)):
        raise TypeError("images must be a non-empty list of (H, W, 3|4) uint8 tensors")
    channels = _check_images(images)[0][2]
    device = images[0].device
    _check_thickness(thickness)
    off = [int(v) for v in offsets]
    xywhr = box_tensor("boxes", boxes).to(device=device, dtype=torch.float32).contiguous()
    n = xywhr.shape[0]
    _check_offsets(off, len(images), n)
    if not isinstance(colors, torch.Tensor) or colors.dtype != torch.uint8 or tuple(colors.shape) != (n, channels):
        raise ValueError(f"colors must be an ({n}, {channels}) uint8 tensor, got "
                         f"{tuple(colors.shape) if isinstance(colors, torch.Tensor) else type(colors).__name__}")
    draw_outlines_batch_op(list(images), xywhr, off, colors.to(device).contiguous(), float(thickness))


draw_outlines_batch_op = registry.draw_outlines_batch


def prepare_drawing() -> None:
    """Pay the draw operator's one-time set-up now instead of in the first frame's draw: the first call of a
    ``torch.library.custom_op`` that mutates its inputs imports ``torch._dynamo`` (about 1.2 s on a 2-core CPU; about
    5 s on a GPU host whose decoders and Python threads compete for the CPU and the interpreter lock, which stalled
    the first buffers of a pipeline that long). One call that draws no box into a 1 x 1 image on the CPU: the
    operator's Python layers are the same for every device. The host C rasteriser is loaded too, so a build without
    it fails here (NativeLibrary's error) rather than at the first frame. obboverlay calls it when it starts (READY
    -> PAUSED), as obbinfer loads its model there."""
    _host()
    draw_outlines_batch_op([torch.zeros(1, 1, 4, dtype=torch.uint8)], torch.zeros(0, 5), [0, 0],
                           torch.zeros(0, 4, dtype=torch.uint8), 1.0)


@draw_outlines_batch_op.register_kernel("cpu")
def _draw_outlines_batch_cpu(images: List[torch.Tensor], boxes: torch.Tensor, offsets: List[int], colors: torch.Tensor,
                             thickness: float) -> None:
    """The CPU kernel of :func:`draw_obbs_batch` on checked inputs (float32 boxes, uint8 colours, one device): the
    host C rasteriser image after image."""
    _check_op_args(images, boxes, offsets, colors, thickness)
    _each_image(images, boxes, offsets, colors, thickness)


@draw_outlines_batch_op.register_fake
def _(images, boxes, offsets, colors, thickness):
    _check_op_args(images, boxes, offsets, colors, thickness)


@draw_outlines_batch_op.register_kernel("cuda")
def _(images, boxes, offsets, colors, thickness):
    shapes = _check_op_args(images, boxes, offsets, colors, thickness)
    lib = cuda_library()
    if lib is None:  # kernels not built: each image drawn on a host copy (draw_obbs' own fallback)
        _each_image(images, boxes, offsets, colors, thickness)
        return
    _draw_cuda(lib, list(images), shapes, boxes, list(offsets), colors, thickness)


def _check_op_args(images, boxes, offsets, colors, thickness) -> list:
    """What both kernels of ``obbmeta::draw_outlines_batch`` check (draw_obbs_batch checks the same first, with
    the forms it converts from): shapes, dtypes, one device, offsets, thickness. Returns the images' shapes."""
    shapes = _check_images(images)
    channels = shapes[0][2]
    device = images[0].device
    if boxes.dtype != torch.float32 or boxes.dim() != 2 or boxes.shape[1] != 5 or not boxes.is_contiguous() \
            or boxes.device != device:
        raise ValueError(f"boxes must be a contiguous (N, 5) float32 tensor on {device}, got {boxes.dtype} "
                         f"{tuple(boxes.shape)} on {boxes.device}")
    n = boxes.shape[0]
    _check_offsets(offsets, len(images), n)
    if colors.dtype != torch.uint8 or tuple(colors.shape) != (n, channels) or not colors.is_contiguous() \
            or colors.device != device:
        raise ValueError(f"colors must be a contiguous ({n}, {channels}) uint8 tensor on {device}, got {colors.dtype} "
                         f"{tuple(colors.shape)} on {colors.device}")
    _check_thickness(thickness)
    return shapes


def _check_images(images) -> list:
    """(height, width, channels) of each image of a non-empty list on one device with one channel count."""
    if not images:
        raise TypeError("images must be a non-empty list of (H, W, 3|4) uint8 tensors")
    shapes = [_check_image(f"images[{k}]", im) for k, im in enumerate(images)]
    device = images[0].device
    if any(im.device != device or c != shapes[0][2] for im, (_, _, c) in zip(images, shapes)):
        raise ValueError("images must be on one device and have the same number of channels")
    return shapes


def _check_offsets(offsets, n_images: int, n: int) -> None:
    if len(offsets) != n_images + 1 or offsets[0] != 0 or offsets[-1] != n or \
            any(b < a for a, b in zip(offsets, offsets[1:])):
        raise ValueError(f"offsets must rise from 0 to the {n} boxes, one more entry than images, got {list(offsets)}")


def _check_thickness(thickness) -> None:
    number_in_range("thickness", thickness, 0, MAX_THICKNESS, f"a number of pixels in (0, {MAX_THICKNESS}]",
                    low_open=True)


def _each_image(images, boxes, offsets, colors, thickness) -> None:
    """Rows ``offsets[k]:offsets[k + 1]`` into ``images[k]`` with :func:`draw_obbs`, image after image."""
    for k, image in enumerate(images):
        if offsets[k + 1] > offsets[k]:
            draw_obbs(image, boxes[offsets[k]:offsets[k + 1]], colors[offsets[k]:offsets[k + 1]], thickness)


def _draw_cuda(lib, images: list, shapes: list, xywhr: torch.Tensor, off: list, rgba: torch.Tensor,
               thickness: float) -> None:
    """The CUDA rasteriser on checked inputs: rows ``off[k]:off[k + 1]`` into ``images[k]``, up to 64 images a pair
    of launches on torch's current stream. Images that share memory (frame metas of one surface) are drawn one
    after the other, so that a later box stays on top as on the host."""
    if len({im.data_ptr() for im in images}) < len(images):
        for k, image in enumerate(images):
            if off[k + 1] > off[k]:
                _draw_cuda(lib, [image], [shapes[k]], xywhr[off[k]:off[k + 1]], [0, off[k + 1] - off[k]],
                           rgba[off[k]:off[k + 1]], thickness)
        return
    device, channels = images[0].device, shapes[0][2]
    stream = torch.cuda.current_stream(device)
    chunk = 64  # DRAW_TABLE_FRAMES in kernels/obbmeta_cuda.cu
    frame_of = torch.repeat_interleave(torch.arange(len(images), dtype=torch.int32) % chunk,
                                       torch.tensor([b - a for a, b in zip(off, off[1:])]))
    frame_of = frame_of.to(device, non_blocking=True)
    for c0 in range(0, len(images), chunk):
        part = range(c0, min(c0 + chunk, len(images)))
        a, b = off[part[0]], off[part[-1] + 1]
        if a == b:
            continue
        keys = [(device.index, stream.cuda_stream, shapes[k][0], shapes[k][1]) for k in part]
        owners = [_take_owner(key, device) for key in keys]
        k = len(part)
        launch(device, lib.obbmeta_cuda_draw_outlines_batch, (ctypes.c_void_p * k)(*[ptr(images[i]) for i in part]),
               (ctypes.c_void_p * k)(*[ptr(o) for o in owners]),
               (ctypes.c_int64 * k)(*[images[i].stride(0) for i in part]),
               (ctypes.c_int * k)(*[shapes[i][0] for i in part]), (ctypes.c_int * k)(*[shapes[i][1] for i in part]),
               k, channels, ptr(xywhr[a:b]), ptr(frame_of[a:b]), b - a, ptr(rgba[a:b]), float(thickness))
        for key, owner in zip(keys, owners):  # only a successful call leaves the scratch all -1 again
            _OWNERS.setdefault(key, []).append(owner)


def _take_owner(key: tuple, device: torch.device) -> torch.Tensor:
    """An all -1 owner scratch of the key's (height, width) on ``device`` (kept ones first)."""
    kept = _OWNERS.get(key)
    if kept:
        return kept.pop()
    while len(_OWNERS) >= 8:  # a few frame sizes and streams at a time: the oldest size goes
        _OWNERS.pop(next(iter(_OWNERS)))
    return torch.full((key[2], key[3]), -1, dtype=torch.int32, device=device)


# Per-pixel owner scratch of the CUDA rasteriser, kept per (device, stream, height, width): the kernels hand
# every pixel back, so it is filled once, not per frame (one per image a batch draws at once). Only a successful
# launch leaves a scratch all -1 again: it goes back to the pool after the launch, not before.
_OWNERS: "dict[tuple, list[torch.Tensor]]" = {}
_PALETTES: "dict[tuple, torch.Tensor]" = {}


def _palette(device: torch.device, channels: int) -> torch.Tensor:
    key = (str(device), channels)
    if key not in _PALETTES:
        table = torch.tensor(PALETTE_RGB, dtype=torch.uint8)
        if channels == 4:
            table = torch.cat([table, torch.full((len(PALETTE_RGB), 1), 255, dtype=torch.uint8)], dim=1)
        _PALETTES[key] = table.to(device)
    return _PALETTES[key]


def _colors(colors, labels, n: int, channels: int, device: torch.device) -> torch.Tensor:
    """(n, channels) uint8 colours on `device`, built without waiting for the GPU."""
    if colors is None:
        palette = _palette(device, channels)
        if labels is None:
            return palette[:1].expand(n, channels).contiguous()
        return palette[torch.remainder(labels.to(device), len(PALETTE_RGB))].contiguous()
    if isinstance(colors, (str, bytes)):
        raise TypeError(f"colors must be 3 or 4 ints in 0..255 or an (N, 3|4) tensor; named colours such as {colors!r} "
                        "are not supported")
    try:
        out = torch.as_tensor(colors)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"colors must be 3 or 4 ints in 0..255 or an (N, 3|4) tensor, got {colors!r}") from exc
    if out.is_floating_point() or out.is_complex() or out.dtype == torch.bool:
        raise TypeError(f"colors must be integers in 0..255, got {out.dtype}")
    if out.dim() == 1:
        out = out[None].expand(n, -1)
    if out.dim() != 2 or out.shape[0] != n or out.shape[1] not in (3, 4):
        raise ValueError(f"colors must be 3 or 4 values, or an ({n}, 3|4) tensor, got shape {tuple(out.shape)}")
    if out.dtype != torch.uint8:  # uint8 needs no range check (and checking a CUDA tensor would sync)
        if n and (int(out.min()) < 0 or int(out.max()) > 255):
            raise ValueError("colors must be in 0..255")
        out = out.to(torch.uint8)
    out = out.to(device)
    if out.shape[1] < channels:
        out = torch.cat([out, torch.full((n, channels - out.shape[1]), 255, dtype=torch.uint8, device=device)], dim=1)
    return out[:, :channels].contiguous()
