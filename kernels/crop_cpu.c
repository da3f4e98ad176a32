/* obbmeta: host build of the rotated crop (kernels/obb_crop.h) behind a C ABI for ctypes.
 *
 * frames: n_desc descriptors (obb_crop_frame); with batch_stride != 0 there is one descriptor and frame b starts
 * batch_stride elements after frame b - 1 (a (B, ...) tensor), else frame b is descriptor b. table: (k, 6) float32
 * rows (batch index, cx, cy, w, h, angle), contiguous. out: (k, channels, out_h, out_w) of params->out_type,
 * contiguous; widths: (k,) int64 content widths (0 for an invalid row). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "obb_abi.h"
#include "obb_crop.h"

#define OBB_EXPORT __attribute__((visibility("default")))

OBB_EXPORT int obbmeta_crop_abi_version(void) { return 2; }

/* What obbmeta/ops/_core.py mirrors (the structs' sizes and offsets, the codes), checked when Python loads this
 * library (obbmeta/_native.py: NativeLibrary): `names[i]` is "T" for sizeof(T), "T.f" for offsetof(T, f), else a
 * constant, with its value in `values[i]`. Writes at most `capacity` entries; returns how many there are. */
OBB_EXPORT int64_t obbmeta_crop_abi_table(const char **names, int64_t *values, int64_t capacity)
{
    static const obb_abi_entry table[] = {
        OBB_ABI_SIZE(obb_crop_frame), OBB_ABI_OFFSET(obb_crop_frame, stride_y), OBB_ABI_OFFSET(obb_crop_frame, height),
        OBB_ABI_OFFSET(obb_crop_frame, channels),
        OBB_ABI_SIZE(obb_crop_params), OBB_ABI_OFFSET(obb_crop_params, keep_aspect),
        OBB_ABI_OFFSET(obb_crop_params, n_frames),
        OBB_ABI_OFFSET(obb_crop_params, in_type), OBB_ABI_OFFSET(obb_crop_params, out_type),
        OBB_ABI_OFFSET(obb_crop_params, padding), OBB_ABI_OFFSET(obb_crop_params, channel_index),
        OBB_ABI_OFFSET(obb_crop_params, fill),
        OBB_ABI_CONST(OBB_CROP_NONFINITE), OBB_ABI_CONST(OBB_CROP_NEGATIVE_SIDE), OBB_ABI_CONST(OBB_CROP_BAD_FRAME),
        OBB_ABI_CONST(OBB_CROP_MAX_CHANNELS), OBB_ABI_CONST(OBB_READ_AS_IS), OBB_ABI_CONST(OBB_READ_LEFT_TO_RIGHT),
        OBB_ABI_CONST(OBB_READ_LONG_SIDE), OBB_ABI_CONST(OBB_U8), OBB_ABI_CONST(OBB_F16), OBB_ABI_CONST(OBB_BF16),
        OBB_ABI_CONST(OBB_F32),
    };
    return OBB_ABI_COPY(table, names, values, capacity);
}

/* Index of the first invalid row (or -1), with why in *reason (OBB_CROP_*). */
OBB_EXPORT int64_t obbmeta_crop_check(const float *table, int64_t k, int32_t n_frames, int32_t *reason)
{
    for (int64_t r = 0; r < k; ++r) {
        const int code = obb_crop_check_row(table + 6 * r, n_frames);
        if (code != OBB_CROP_OK) {
            *reason = code;
            return r;
        }
    }
    *reason = OBB_CROP_OK;
    return -1;
}

/* The content width each row would get (0 for an invalid row): the output width of keep_aspect calls is their max. */
OBB_EXPORT void obbmeta_crop_widths(const float *table, int64_t k, const obb_crop_params *p, int64_t *widths)
{
    for (int64_t r = 0; r < k; ++r) {
        obb_crop_map m;
        obb_crop_setup(table + 6 * r, p, &m);
        widths[r] = m.width;
    }
}

/* One crop per element-type pair: the loads and stores are specialised, the sampling is obb_crop.h's. Everything the
 * loop reads is copied to locals first: the output stores (uint8 ones alias anything) must not force reloads. */
#define LOAD_U8(v) ((float)(v))
#define LOAD_F16(v) obb_half_to_float(v)
#define LOAD_BF16(v) obb_bf16_to_float(v)
#define LOAD_F32(v) (v)
#define STORE_U8(v) obb_float_to_u8(v)
#define STORE_F16(v) obb_float_to_half(v)
#define STORE_BF16(v) obb_float_to_bf16(v)
#define STORE_F32(v) (v)

/* Four float lanes (SSE on x86-64, NEON on arm64): uint8 frames of 4 interleaved channels (RGBA-like surfaces) blend
 * all channels of a tap at once, lane by lane the operations of obb_crop_blend. */
typedef float obb_v4f __attribute__((vector_size(16)));
typedef int32_t obb_v4i __attribute__((vector_size(16)));

static inline obb_v4f load4(const void *p)
{
    uint32_t u;
    memcpy(&u, p, 4);
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    const __m128i x = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128((int)u), zero), zero);
    return (obb_v4f)_mm_cvtepi32_ps(x);
#else
    const obb_v4i v = {(int32_t)(u & 0xffu), (int32_t)((u >> 8) & 0xffu), (int32_t)((u >> 16) & 0xffu),
                       (int32_t)(u >> 24)};
    return __builtin_convertvector(v, obb_v4f);
#endif
}

/* The four lanes as obb_float_to_u8 converts them, packed little end first. */
static inline uint32_t to_u8x4(obb_v4f v)
{
#if defined(__SSE2__)
    const __m128 x = _mm_min_ps(_mm_max_ps((__m128)v, _mm_setzero_ps()), _mm_set1_ps(255.0f));
    __m128i i = _mm_cvtps_epi32(x);
    i = _mm_packs_epi32(i, i);
    return (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(i, i));
#else
    return (uint32_t)obb_float_to_u8(v[0]) | (uint32_t)obb_float_to_u8(v[1]) << 8 |
           (uint32_t)obb_float_to_u8(v[2]) << 16 | (uint32_t)obb_float_to_u8(v[3]) << 24;
#endif
}

static inline obb_v4f blend4(obb_v4f v00, obb_v4f v01, obb_v4f v10, obb_v4f v11, float fx, float fy)
{
    const obb_v4f top = v00 * (1.0f - fx) + v01 * fx;
    const obb_v4f bottom = v10 * (1.0f - fx) + v11 * fx;
    return top * (1.0f - fy) + bottom * fy;
}

/* Frames are far larger than the caches: each pixel asks for the taps of the pixel this many columns ahead. */
#define PREFETCH_AHEAD 16

#define DEFINE_CROP(NAME, TIN, LOAD, TOUT, STORE)                                                                    \
    static void NAME(const obb_crop_frame *f, const obb_crop_map *map, const obb_crop_params *p, void *out_bytes,    \
                     int64_t base)                                                                                   \
    {                                                                                                                \
        const obb_crop_map m = *map;                                                                                 \
        const int32_t C = p->channels, oh = p->out_h, ow = p->out_w;                                                 \
        const int64_t plane = (int64_t)oh * ow;                                                                      \
        TOUT *restrict out = (TOUT *)out_bytes + base;                                                               \
        TOUT fill_out[OBB_CROP_MAX_CHANNELS];                                                                        \
        float fill[OBB_CROP_MAX_CHANNELS];                                                                           \
        int64_t channel[OBB_CROP_MAX_CHANNELS];                                                                      \
        int32_t pick[OBB_CROP_MAX_CHANNELS];                                                                         \
        const int64_t sx = f ? f->stride_x : 0, sy = f ? f->stride_y : 0;                                            \
        const int32_t height = f ? f->height : 0, width = f ? f->width : 0;                                          \
        const TIN *restrict src = f ? (const TIN *)(uintptr_t)f->data : NULL;                                        \
        const int vec4 = f && sizeof(TIN) == 1 && f->channels == 4 && f->stride_c == 1 && sx == 4;                  \
        for (int32_t c = 0; c < C; ++c) {                                                                            \
            fill[c] = p->fill[c];                                                                                    \
            fill_out[c] = STORE(p->fill[c]);                                                                         \
            channel[c] = f ? (int64_t)p->channel_index[c] * f->stride_c : 0;                                         \
            pick[c] = p->channel_index[c] & 3; /* used with 4-channel frames only */                                 \
        }                                                                                                            \
        for (int32_t j = 0; j < oh; ++j) {                                                                           \
            TOUT *restrict row = out + (int64_t)j * ow;                                                              \
            for (int32_t i = 0; i < ow; ++i) {                                                                       \
                if (f) {                                                                                             \
                    const float px = m.ox + (float)(i + PREFETCH_AHEAD) * m.ax + (float)j * m.bx;                    \
                    const float py = m.oy + (float)(i + PREFETCH_AHEAD) * m.ay + (float)j * m.by;                    \
                    if (px >= 0.0f && px < (float)(width - 1) && py >= 0.0f && py < (float)(height - 1)) {           \
                        const TIN *ahead = src + (int64_t)py * sy + (int64_t)px * sx;                                \
                        __builtin_prefetch(ahead);                                                                   \
                        __builtin_prefetch(ahead + sy);                                                              \
                    }                                                                                                \
                }                                                                                                    \
                int32_t x0, y0;                                                                                      \
                float fx, fy;                                                                                        \
                if (!f || i >= m.width || !obb_crop_locate(&m, i, j, height, width, &x0, &y0, &fx, &fy)) {           \
                    for (int32_t c = 0; c < C; ++c) row[c * plane + i] = fill_out[c];                                \
                    continue;                                                                                        \
                }                                                                                                    \
                const TIN *restrict at = src + (int64_t)y0 * sy + (int64_t)x0 * sx;                                  \
                if (x0 >= 0 && y0 >= 0 && x0 + 1 < width && y0 + 1 < height) {                                       \
                    if (vec4) {                                                                                      \
                        const uint8_t *b = (const uint8_t *)at; /* uint8 pixels: strides are bytes */               \
                        const obb_v4f v = blend4(load4(b), load4(b + 4), load4(b + sy), load4(b + sy + 4), fx, fy);  \
                        if (sizeof(TOUT) == 1) { /* uint8 out: convert the four lanes at once */                    \
                            const uint32_t u = to_u8x4(v);                                                           \
                            for (int32_t c = 0; c < C; ++c) row[c * plane + i] = (TOUT)(u >> (8 * pick[c]));         \
                        } else {                                                                                     \
                            for (int32_t c = 0; c < C; ++c) row[c * plane + i] = STORE(v[pick[c]]);                  \
                        }                                                                                            \
                        continue;                                                                                    \
                    }                                                                                                \
                    for (int32_t c = 0; c < C; ++c) {                                                                \
                        const TIN *restrict q = at + channel[c];                                                     \
                        row[c * plane + i] = STORE(obb_crop_blend(LOAD(q[0]), LOAD(q[sx]), LOAD(q[sy]),              \
                                                                  LOAD(q[sy + sx]), fx, fy));                        \
                    }                                                                                                \
                    continue;                                                                                        \
                }                                                                                                    \
                /* at the frame's edge: taps outside take the fill */                                               \
                const int left = x0 >= 0, right = x0 + 1 < width, top = y0 >= 0, bottom = y0 + 1 < height;           \
                for (int32_t c = 0; c < C; ++c) {                                                                    \
                    const TIN *q = at + channel[c];                                                                  \
                    const float v00 = top && left ? LOAD(q[0]) : fill[c];                                            \
                    const float v01 = top && right ? LOAD(q[sx]) : fill[c];                                          \
                    const float v10 = bottom && left ? LOAD(q[sy]) : fill[c];                                        \
                    const float v11 = bottom && right ? LOAD(q[sy + sx]) : fill[c];                                  \
                    row[c * plane + i] = STORE(obb_crop_blend(v00, v01, v10, v11, fx, fy));                          \
                }                                                                                                    \
            }                                                                                                        \
        }                                                                                                            \
    }

#define DEFINE_CROPS_FROM(IN, TIN, LOAD)                                                                             \
    DEFINE_CROP(crop_##IN##_u8, TIN, LOAD, uint8_t, STORE_U8)                                                        \
    DEFINE_CROP(crop_##IN##_f16, TIN, LOAD, uint16_t, STORE_F16)                                                     \
    DEFINE_CROP(crop_##IN##_bf16, TIN, LOAD, uint16_t, STORE_BF16)                                                   \
    DEFINE_CROP(crop_##IN##_f32, TIN, LOAD, float, STORE_F32)

DEFINE_CROPS_FROM(u8, uint8_t, LOAD_U8)
DEFINE_CROPS_FROM(f16, uint16_t, LOAD_F16)
DEFINE_CROPS_FROM(bf16, uint16_t, LOAD_BF16)
DEFINE_CROPS_FROM(f32, float, LOAD_F32)

typedef void (*crop_fn)(const obb_crop_frame *, const obb_crop_map *, const obb_crop_params *, void *, int64_t);

static const crop_fn CROPS[4][4] = {
    {crop_u8_u8, crop_u8_f16, crop_u8_bf16, crop_u8_f32},
    {crop_f16_u8, crop_f16_f16, crop_f16_bf16, crop_f16_f32},
    {crop_bf16_u8, crop_bf16_f16, crop_bf16_bf16, crop_bf16_f32},
    {crop_f32_u8, crop_f32_f16, crop_f32_bf16, crop_f32_f32},
};

/* Returns the index of the first invalid row (its crop is all fill, its width 0), -1 when all were valid, or -2 for
 * parameters out of range (types, sizes, channel indices). */
OBB_EXPORT int64_t obbmeta_crop(const obb_crop_frame *frames, int64_t batch_stride, const float *table, int64_t k,
                                const obb_crop_params *p, void *out, int64_t *widths)
{
    if (!obb_crop_params_valid(p, frames, batch_stride ? 1 : p->n_frames)) return -2;
    const crop_fn crop = CROPS[p->in_type][p->out_type];
    const int64_t per_crop = (int64_t)p->channels * p->out_h * p->out_w;
    const int esize = obb_crop_type_size(p->in_type);
    int64_t first_bad = -1;
    for (int64_t r = 0; r < k; ++r) {
        obb_crop_map m;
        const obb_crop_frame *f = NULL;
        obb_crop_frame one;
        if (obb_crop_setup(table + 6 * r, p, &m) != OBB_CROP_OK) {
            if (first_bad < 0) first_bad = r;
        } else if (batch_stride) {
            one = frames[0];
            one.data += (uint64_t)((int64_t)m.frame * batch_stride * esize);
            f = &one;
        } else {
            f = frames + m.frame;
        }
        crop(f, &m, p, out, r * per_crop);
        widths[r] = m.width;
    }
    return first_bad;
}
