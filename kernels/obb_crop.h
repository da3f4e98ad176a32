/* obbmeta: upright crops of oriented boxes (bilinear resampling), one definition for the host (C) and the device
 * (CUDA): the per-box inverse map, the per-pixel tap positions and weights, and the value conversions.
 *
 * Coordinates: a box (cx, cy, w, h, angle) lives in continuous image coordinates whose pixel (x, y) covers
 * [x, x + 1) x [y, y + 1) (centre at x + 0.5, y + 0.5), the coordinates of obbmeta's boxes, its drawing and
 * DeepStream's rect_params. The angle is in radians, positive clockwise on screen: the width axis is
 * u = (cos a, sin a), the height axis v = (-sin a, cos a).
 *
 * The crop: output pixel (i, j) (column i, row j) of a crop of out_h rows and cw content columns has its centre at
 * ((i + 0.5) / cw, (j + 0.5) / out_h) of the box's extent, i.e. at the image point
 *     c + ((i + 0.5) sx - W / 2) u + ((j + 0.5) sy - H / 2) v,   sx = W / cw, sy = H / out_h,
 * with W x H the (padded) box size. So the crop's x axis runs along u and its rows go down along v: row 0 is the box
 * edge from corner 0 to corner 1 (the edge at -h/2), which is "up". This is OpenCV's warpAffine with the inverse map
 * (WARP_INVERSE_MAP) once both sides are written in pixel-centre indices (subtract 0.5 from image coordinates), and
 * the "aligned" convention of roi_align (sampling at the bin centres, one sample per bin).
 *
 * Sampling: bilinear on the 4 pixels around the sample position (in pixel-centre indices X, Y: x0 = floor(X),
 * fx = X - x0); a tap outside the frame takes the fill value (OpenCV's BORDER_CONSTANT), so a crop fades into the
 * fill from the centres of the frame's edge pixels to half a pixel beyond its edge. Per pixel the arithmetic is
 * float32; the per-box set-up is double.
 *
 * Reading direction (the same rectangle has the names (w, h, a), (w, h, a + pi) and (h, w, a + pi/2)):
 *  - OBB_READ_AS_IS: the box's own name: x along its width axis u.
 *  - OBB_READ_LEFT_TO_RIGHT: u turned by pi when it points left on screen (cos a < 0), so the crop is upright;
 *    a vertical u (|cos a| <= OBB_CROP_VERTICAL_EPS) is made to point up (the crop reads bottom to top).
 *  - OBB_READ_LONG_SIDE: x along the longer side (a box with h > w is named (h, w, a + pi/2)), then left to right.
 */
#ifndef OBBMETA_OBB_CROP_H
#define OBBMETA_OBB_CROP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "obb_geometry.h" /* OBB_HD */
#if defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#endif

#define OBB_CROP_MAX_CHANNELS 16
#define OBB_CROP_VERTICAL_EPS 1e-6

enum { OBB_READ_AS_IS = 0, OBB_READ_LEFT_TO_RIGHT = 1, OBB_READ_LONG_SIDE = 2 };
/* Element types of frames and crops. */
enum { OBB_U8 = 0, OBB_F16 = 1, OBB_BF16 = 2, OBB_F32 = 3 };
/* Why a box row is invalid (obb_crop_setup's result). */
enum { OBB_CROP_OK = 0, OBB_CROP_NONFINITE = 1, OBB_CROP_NEGATIVE_SIDE = 2, OBB_CROP_BAD_FRAME = 3 };

/* One frame as the kernels read it: any strides (in elements), so channel-first and channel-last tensors and
 * pitched NVMM rows are read in place. 48 bytes, the same in C, CUDA and obbmeta/ops/_core.py (ctypes). */
typedef struct {
    uint64_t data; /* address of element (y 0, x 0, channel 0) */
    int64_t stride_y, stride_x, stride_c;
    int32_t height, width, channels, reserved;
} obb_crop_frame;

/* What every crop of one call shares (the ctypes mirror is in obbmeta/ops/_core.py). */
typedef struct {
    int32_t out_h, out_w;   /* output rows and columns (out_w is the maximum width when keep_aspect) */
    int32_t keep_aspect;    /* 1: content width round(out_h * W / H) clamped to [1, out_w], columns beyond it filled */
    int32_t reading;        /* OBB_READ_* */
    int32_t channels;       /* output channels, <= OBB_CROP_MAX_CHANNELS */
    int32_t n_frames;       /* valid batch indices are 0 .. n_frames - 1 */
    int32_t in_type, out_type;
    float padding;          /* margin on every side, as a fraction of the box's shorter side */
    int32_t reserved;
    int32_t channel_index[OBB_CROP_MAX_CHANNELS]; /* output channel c reads frame channel channel_index[c] */
    float fill[OBB_CROP_MAX_CHANNELS];            /* per output channel, in the frame's value units */
} obb_crop_params;

/* One box's inverse map, in pixel-centre indices: sample (i, j) is at (ox + i ax + j bx, oy + i ay + j by). */
typedef struct {
    float ox, oy, ax, ay, bx, by;
    int32_t width; /* content columns */
    int32_t frame; /* batch index */
} obb_crop_map;

/* Content width of a W x H box cropped to out_h rows with the aspect ratio kept: round half up, in [1, max_w]. */
OBB_HD int32_t obb_crop_aspect_width(double W, double H, int32_t out_h, int32_t max_w)
{
    if (!(H > 0.0)) return W > 0.0 ? max_w : 1;
    const double x = floor((double)out_h * W / H + 0.5);
    if (!(x >= 1.0)) return 1;
    return x >= (double)max_w ? max_w : (int32_t)x;
}

/* Whether the call's parameters are in range for these frame descriptors (the wrapper checks them first; this keeps
 * a direct C call from reading outside a frame). */
OBB_HD int obb_crop_params_valid(const obb_crop_params *p, const obb_crop_frame *frames, int32_t n_desc)
{
    if (p->in_type < OBB_U8 || p->in_type > OBB_F32 || p->out_type < OBB_U8 || p->out_type > OBB_F32 ||
        p->channels < 1 || p->channels > OBB_CROP_MAX_CHANNELS || p->out_h < 1 || p->out_w < 1 || n_desc < 1 ||
        (int64_t)p->out_h * p->out_w > 0x7fffffff || p->n_frames < 0)
        return 0;
    for (int32_t d = 0; d < n_desc; ++d)
        for (int32_t c = 0; c < p->channels; ++c)
            if (p->channel_index[c] < 0 || p->channel_index[c] >= frames[d].channels) return 0;
    return 1;
}

/* The row's validity: finite values, w >= 0 and h >= 0, an integer batch index in [0, n_frames). */
OBB_HD int obb_crop_check_row(const float *row, int32_t n_frames)
{
    for (int k = 0; k < 6; ++k)
        if (!isfinite(row[k])) return OBB_CROP_NONFINITE;
    if (!(row[3] >= 0.0f && row[4] >= 0.0f)) return OBB_CROP_NEGATIVE_SIDE;
    const double b = (double)row[0];
    if (!(b >= 0.0 && b < (double)n_frames && b == floor(b))) return OBB_CROP_BAD_FRAME;
    return OBB_CROP_OK;
}

/* Set up the inverse map of table row `row` = (batch index, cx, cy, w, h, angle). Returns OBB_CROP_OK or why the
 * row is invalid (then m->width = 0 and m->frame = -1: the crop is all fill). */
OBB_HD int obb_crop_setup(const float *row, const obb_crop_params *p, obb_crop_map *m)
{
    const int code = obb_crop_check_row(row, p->n_frames);
    if (code != OBB_CROP_OK) {
        m->ox = m->oy = m->ax = m->ay = m->bx = m->by = 0.0f;
        m->width = 0;
        m->frame = -1;
        return code;
    }
    double w = (double)row[3], h = (double)row[4];
    const double a = (double)row[5];
    double c = cos(a), s = sin(a);
    if (p->reading == OBB_READ_LONG_SIDE && h > w) { /* (h, w, a + pi/2): u' = v */
        const double t = w, cc = c;
        w = h;
        h = t;
        c = -s;
        s = cc;
    }
    if (p->reading != OBB_READ_AS_IS && (c < -OBB_CROP_VERTICAL_EPS || (fabs(c) <= OBB_CROP_VERTICAL_EPS && s > 0.0))) {
        c = -c; /* (w, h, a + pi) */
        s = -s;
    }
    const double margin = (double)p->padding * (w < h ? w : h);
    const double W = w + 2.0 * margin, H = h + 2.0 * margin;
    const int32_t cw = p->keep_aspect ? obb_crop_aspect_width(W, H, p->out_h, p->out_w) : p->out_w;
    const double sx = W / (double)cw, sy = H / (double)p->out_h;
    const double s0 = 0.5 * sx - 0.5 * W, t0 = 0.5 * sy - 0.5 * H; /* local position of pixel (0, 0)'s centre */
    m->ox = (float)((double)row[1] - 0.5 + s0 * c - t0 * s);
    m->oy = (float)((double)row[2] - 0.5 + s0 * s + t0 * c);
    m->ax = (float)(sx * c);
    m->ay = (float)(sx * s);
    m->bx = (float)(-sy * s);
    m->by = (float)(sy * c);
    m->width = cw;
    m->frame = (int32_t)row[0];
    return OBB_CROP_OK;
}

/* floor(v) for -1 < v < 2^31, exact: one instruction on the GPU; on the host a truncation and a compare (libm's
 * floorf is a call or a long sequence without SSE4.1). */
OBB_HD int32_t obb_crop_floor(float v)
{
#if defined(__CUDA_ARCH__)
    return (int32_t)floorf(v);
#else
    const int32_t t = (int32_t)v;
    return t - (v < (float)t);
#endif
}

/* Where output pixel (i, j) samples: the top-left tap (x0, y0) and the weights of the right / lower taps. Returns 0
 * when all four taps lie outside the frame (or the position is not finite): the pixel is the fill. */
OBB_HD int obb_crop_locate(const obb_crop_map *m, int32_t i, int32_t j, int32_t height, int32_t width, int32_t *x0,
                           int32_t *y0, float *fx, float *fy)
{
    const float X = m->ox + (float)i * m->ax + (float)j * m->bx;
    const float Y = m->oy + (float)i * m->ay + (float)j * m->by;
    if (!(X > -1.0f && X < (float)width && Y > -1.0f && Y < (float)height)) return 0;
    *x0 = obb_crop_floor(X);
    *y0 = obb_crop_floor(Y);
    *fx = X - (float)*x0;
    *fy = Y - (float)*y0;
    return 1;
}

OBB_HD float obb_crop_blend(float v00, float v01, float v10, float v11, float fx, float fy)
{
    const float top = v00 * (1.0f - fx) + v01 * fx;
    const float bottom = v10 * (1.0f - fx) + v11 * fx;
    return top * (1.0f - fy) + bottom * fy;
}

/* ---- element conversions (bit exact on host and device: IEEE half / bfloat16, round to nearest even) ---------- */
OBB_HD float obb_bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

OBB_HD uint32_t obb_float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

OBB_HD float obb_half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
        const float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (e == 31) return obb_bits_to_float(sign | 0x7f800000u | (m << 13));
    return obb_bits_to_float(sign | ((e + 112u) << 23) | (m << 13));
}

OBB_HD uint16_t obb_float_to_half(float f)
{
    const uint32_t x = obb_float_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN stays NaN */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                        /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) { /* below half's smallest normal (2^-14): a subnormal or zero, in units of 2^-24 */
        const uint32_t e = ax >> 23;
        if (e < 102u) return (uint16_t)sign; /* < 2^-25: rounds to zero */
        const uint32_t mant = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
        uint32_t q = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
        return (uint16_t)(sign | q);
    }
    uint32_t q = (ax >> 13) - (112u << 10); /* rebias the exponent; a rounding carry may step it (to inf at most) */
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
    return (uint16_t)(sign | q);
}

OBB_HD float obb_bf16_to_float(uint16_t b) { return obb_bits_to_float((uint32_t)b << 16); }

OBB_HD uint16_t obb_float_to_bf16(float f)
{
    const uint32_t x = obb_float_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* NaN stays NaN (quiet) */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* uint8 results saturate and round half to even (as OpenCV's saturate_cast); NaN becomes 0. Branch-free: max / min
 * instructions clamp (both return the second operand for NaN), the conversion rounds to nearest even. */
OBB_HD uint8_t obb_float_to_u8(float v)
{
#if defined(__CUDA_ARCH__)
    return (uint8_t)__float2int_rn(fminf(fmaxf(v, 0.0f), 255.0f));
#elif defined(__SSE2__) && !defined(__CUDACC__)
    const __m128 r = _mm_min_ss(_mm_max_ss(_mm_set_ss(v), _mm_setzero_ps()), _mm_set_ss(255.0f));
    return (uint8_t)_mm_cvtss_si32(r); /* MXCSR's rounding: nearest even unless a caller changed it */
#else
    float r = v > 0.0f ? v : 0.0f;
    r = r < 255.0f ? r : 255.0f;
    return (uint8_t)(int32_t)((r + 12582912.0f) - 12582912.0f); /* floats in [2^23, 2^24) are 1 apart */
#endif
}

/* Size in bytes of an element of type t. */
OBB_HD int obb_crop_type_size(int32_t t) { return t == OBB_U8 ? 1 : (t == OBB_F32 ? 4 : 2); }

#endif /* OBBMETA_OBB_CROP_H */
