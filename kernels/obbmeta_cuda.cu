// obbmeta: CUDA kernels built on the same headers as the host library (obb_geometry.h, obb_draw.h, obb_crop.h,
// obb_status.h), and the NMS / decode kernels of obbmeta_nms_core.cuh, obbmeta_nms.cuh and obbmeta_decode.cuh.
// Plain C ABI for ctypes: device pointers from torch tensors and the caller's cudaStream_t; every launch is
// asynchronous on that stream, and errors are returned as cudaError_t codes.
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "obb_draw.h"
#include "obb_geometry.h"

#define OBB_EXPORT extern "C" __attribute__((visibility("default")))

OBB_EXPORT int obbmeta_cuda_abi_version(void) { return 8; }

// Boxes arrive as float32 or float64 (n, 5); the geometry runs on obb_box (double) either way.
__device__ __forceinline__ obb_box load_box(const float *b) { return obb_box_from_float(b); }
__device__ __forceinline__ obb_box load_box(const double *b) { return obb_box_from_double(b); }

OBB_EXPORT const char *obbmeta_cuda_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

// This library links its own (static) CUDA runtime, whose current device is separate from torch's: the caller
// selects the tensors' device before each call.
OBB_EXPORT int obbmeta_cuda_set_device(int device) { return (int)cudaSetDevice(device); }

// Greedy rotated NMS and the fused YOLO-OBB decode, on one NMS core (obbmeta_nms_core.cuh); their C ABI is below.
#include "obbmeta_nms.cuh"
#include "obbmeta_decode.cuh"

// ---- IoU ---------------------------------------------------------------------------------------------------------
template <typename T>
__global__ void iou_matrix_kernel(const T *a, int64_t n, const T *b, int64_t m, T *out, int aligned)
{
    const int64_t total = aligned ? n : n * m;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < total; p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = aligned ? p : p / m, j = aligned ? p : p % m;
        const obb_box bi = load_box(a + 5 * i), bj = load_box(b + 5 * j);
        out[p] = (T)obb_box_iou(&bi, &bj);  // prepares both boxes: an IoU matrix is not the hot path
    }
}

// a, b, out: float32 (is_double = 0) or float64 (is_double = 1), all three the same.
OBB_EXPORT int obbmeta_cuda_iou(const void *a, int64_t n, const void *b, int64_t m, void *out, int aligned,
                                int is_double, void *stream)
{
    const int64_t work = aligned ? n : n * m;
    if (work == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (is_double)
        iou_matrix_kernel<double><<<obbnms::grid_of(work, 256), 256, 0, s>>>((const double *)a, n, (const double *)b,
                                                                             m, (double *)out, aligned);
    else
        iou_matrix_kernel<float><<<obbnms::grid_of(work, 256), 256, 0, s>>>((const float *)a, n, (const float *)b, m,
                                                                            (float *)out, aligned);
    return (int)cudaGetLastError();
}

// ---- greedy rotated NMS and fused YOLO-OBB decode (obbmeta_nms.cuh, obbmeta_decode.cuh) -------------------------
// Candidate words that can occur in the worst case for groups of at most `len` boxes, n in all: 64 rows per chunk
// times the chunks right of theirs, and one word per row for its own chunk.
// Pools hold fewer than 2^31 entries (the column offsets are int): data that needs more is flagged as too large.
static int64_t pool_cap(int64_t entries) { return entries < 0x7fffffffLL ? entries : 0x7fffffffLL; }

static int64_t pool_bound(int64_t n, int64_t len)
{
    const int64_t t = obbnms::TILE, w = (len + t - 1) / t;
    return (w > 1 ? (n / t + 1) * t * (w - 1) / 2 + t * w : 0) + n;
}

// Workspace bytes of obbmeta_cuda_nms for a pool of `pool_entries` candidate words, and the pool that suffices
// for any data.
OBB_EXPORT int obbmeta_cuda_nms_sizes(int64_t n, int has_labels, int is_double, int64_t pool_entries,
                                      int64_t *workspace_bytes, int64_t *pool_needed_at_most)
{
    if (n < 0 || n > 0x7fffffffLL || pool_entries < 0) return (int)cudaErrorInvalidValue;
    *pool_needed_at_most = pool_cap(pool_bound(n, n));
    pool_entries = pool_cap(pool_entries);
    if (is_double)
        return obbnms::nms_impl<double>(n, nullptr, nullptr, nullptr, has_labels != 0, 0.0, nullptr, 0, pool_entries,
                                        nullptr, nullptr, nullptr, 0, workspace_bytes);
    return obbnms::nms_impl<float>(n, nullptr, nullptr, nullptr, has_labels != 0, 0.0, nullptr, 0, pool_entries,
                                   nullptr, nullptr, nullptr, 0, workspace_bytes);
}

// Greedy rotated NMS, all on `stream`, no host sync. keep: n int64, the kept indices by descending score, then -1.
// status: 3 int64 (kept count; flags of obb_status.h: non-finite / out-of-range boxes, non-finite scores, pool too
// small; the candidate words the data needed). count: NULL, or one int64 that receives the kept count, -1 when a
// flag is set (nms_rotated_padded's count). The workspace (obbmeta_cuda_nms_sizes) holds a pool of pool_entries.
OBB_EXPORT int obbmeta_cuda_nms(int64_t n, const void *boxes, const void *scores, int is_double,
                                const int64_t *labels, double threshold, void *workspace, int64_t workspace_bytes,
                                int64_t pool_entries, int64_t *keep, int64_t *status, int64_t *count, void *stream)
{
    if (n < 0 || n > 0x7fffffffLL || pool_entries < 0) return (int)cudaErrorInvalidValue;
    pool_entries = pool_cap(pool_entries);
    cudaStream_t s = (cudaStream_t)stream;
    if (is_double)
        return obbnms::nms_impl<double>(n, (const double *)boxes, (const double *)scores, labels, labels != nullptr,
                                        threshold, workspace, workspace_bytes, pool_entries, keep, status, count, s,
                                        nullptr);
    return obbnms::nms_impl<float>(n, (const float *)boxes, (const float *)scores, labels, labels != nullptr,
                                   threshold, workspace, workspace_bytes, pool_entries, keep, status, count, s,
                                   nullptr);
}

// Workspace bytes of obbmeta_cuda_yolo_obb for a pool of `pool_entries`, and the pool that suffices for any head.
OBB_EXPORT int obbmeta_cuda_yolo_obb_sizes(int64_t B, int64_t C, int64_t N, int multi, int agnostic, int64_t k,
                                           int64_t pool_entries, int64_t *workspace_bytes, int64_t *pool_needed_at_most)
{
    const int64_t nc = C - 5, per_image = multi ? N * nc : N;
    if (B < 1 || nc < 1 || N < 0 || k < 1 || pool_entries < 0 || B * per_image > 0x7fffffffLL)
        return (int)cudaErrorInvalidValue;
    const int64_t kk = k < per_image ? k : per_image;
    *pool_needed_at_most = pool_cap(B * pool_bound(kk, kk));
    return obbnms::decode_impl(nullptr, B, C, N, multi, agnostic, 0, 0, nullptr, nullptr, nullptr, k, 0, 1, 0, 0,
                               nullptr, 0, pool_cap(pool_entries), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                               0, workspace_bytes);
}

// YOLO-OBB raw head (B, C = 4 + nc + 1, N) float32 -> per image at most max_det boxes: candidates (score > conf,
// best class or every class with multi, class allowed) -> the k best per image -> greedy rotated NMS per (image,
// class) (per image when agnostic) -> by descending score -> the letterbox inverse. out_boxes (B, max_det, 5),
// out_scores (B, max_det), out_labels (B, max_det): rows past counts[b] are 0; counts all -1 when *flags (obb_status.h,
// as for obbmeta_cuda_nms) is not 0; *needed: the candidate words the data needed (int64 each).
// class_iou: NULL (every class at `iou`), or nc IoU thresholds, one per class (class-aware NMS only). class_conf:
// NULL (every class at `conf`), or nc score thresholds: an item is a candidate when its class's score is above its
// class's threshold (the best class's, without multi).
OBB_EXPORT int obbmeta_cuda_yolo_obb(const float *head, int64_t B, int64_t C, int64_t N, int multi, int agnostic,
                                     double conf, double iou, const int *allowed, const double *class_iou,
                                     const float *class_conf, int64_t k, int64_t max_det,
                                     double scale, double pad_x, double pad_y, void *workspace, int64_t workspace_bytes,
                                     int64_t pool_entries, float *out_boxes, float *out_scores, int64_t *out_labels,
                                     int64_t *counts, int64_t *flags, int64_t *needed, void *stream)
{
    const int64_t nc = C - 5, per_image = multi ? N * nc : N;
    if (B < 1 || nc < 1 || N < 0 || k < 1 || max_det < 0 || pool_entries < 0 || B * per_image > 0x7fffffffLL ||
        (class_iou && agnostic))
        return (int)cudaErrorInvalidValue;
    return obbnms::decode_impl(head, B, C, N, multi, agnostic, conf, iou, allowed, class_iou, class_conf, k, max_det,
                               scale, pad_x, pad_y, workspace, workspace_bytes, pool_cap(pool_entries), out_boxes, out_scores,
                               out_labels, counts, flags, needed, (cudaStream_t)stream, nullptr);
}

// ---- drawing -----------------------------------------------------------------------------------------------------
// One block per (box, edge); threads stride along the edge's major axis. Pass 1 claims each pixel for the highest
// box index that covers it (atomicMax), pass 2 paints only pixels a box owns and hands the pixel back (-1), so
// crossings resolve as on the host (later boxes on top), the result does not depend on thread timing, and the
// scratch is all -1 again after every call (no per-call fill of a frame-sized buffer).
// Up to DRAW_TABLE_FRAMES images (one, or obboverlay's surfaces) in one pair of launches, each box drawn into the
// image box_frame[box] names in the table. Every image has its own owner scratch; box indices grow image after image,
// so within an image a later box is on top.
#define DRAW_TABLE_FRAMES 64
struct DrawFrame {
    uint8_t *image;
    int *owner;
    int64_t row_stride;
    int height, width;
};
struct DrawTable {
    DrawFrame f[DRAW_TABLE_FRAMES];
};

template <int PASS>
__global__ void draw_batch_kernel(DrawTable table, int channels, const float *boxes, const int *box_frame, int64_t n,
                                  const uint8_t *colors, double thickness)
{
    const int64_t box = blockIdx.x / 4;
    const int k = blockIdx.x % 4;
    __shared__ obb_edge e;
    __shared__ int live, frame;
    if (threadIdx.x == 0) {
        frame = box < n ? box_frame[box] : -1;
        live = frame >= 0 && frame < DRAW_TABLE_FRAMES &&
               obb_edge_setup(boxes + 5 * box, k, thickness, table.f[frame >= 0 ? frame : 0].width,
                              table.f[frame >= 0 ? frame : 0].height, &e);
    }
    __syncthreads();
    if (!live) return;
    const DrawFrame f = table.f[frame];
    for (int m = e.m0 + threadIdx.x; m <= e.m1; m += blockDim.x) {
        int lo, hi;
        if (!obb_edge_minor_span(&e, m, f.width, f.height, &lo, &hi)) continue;
        for (int v = lo; v <= hi; ++v) {
            const int x = e.major_is_x ? m : v, y = e.major_is_x ? v : m;
            if (!obb_edge_covers(&e, x, y)) continue;
            int *slot = f.owner + (int64_t)y * f.width + x;
            if (PASS == 0) {
                atomicMax(slot, (int)box);
            } else if (atomicCAS(slot, (int)box, -1) == (int)box) {
                uint8_t *px = f.image + (int64_t)y * f.row_stride + (int64_t)x * channels;
                for (int c = 0; c < channels; ++c) px[c] = colors[box * channels + c];
            }
        }
    }
}

// images / owners / row_strides / heights / widths are host arrays of n_frames entries (each owner height * width
// ints, all -1 on entry: a fresh fill or the scratch of an earlier call; all -1 on return), box_frame (device, n
// int32) names each box's image. The table travels by value in the kernel parameters (no copy, no sync).
OBB_EXPORT int obbmeta_cuda_draw_outlines_batch(uint8_t *const *images, int *const *owners, const int64_t *row_strides,
                                                const int *heights, const int *widths, int n_frames, int channels,
                                                const float *boxes, const int *box_frame, int64_t n,
                                                const uint8_t *colors, double thickness, void *stream)
{
    if (n == 0) return 0;
    if (n_frames < 1 || n_frames > DRAW_TABLE_FRAMES || n > (int64_t)0x7fffffff / 4) return (int)cudaErrorInvalidValue;
    DrawTable table;
    memset(&table, 0, sizeof table);
    for (int i = 0; i < n_frames; ++i) table.f[i] = DrawFrame{images[i], owners[i], row_strides[i], heights[i], widths[i]};
    cudaStream_t s = (cudaStream_t)stream;
    const unsigned blocks = (unsigned)(n * 4);
    draw_batch_kernel<0><<<blocks, 64, 0, s>>>(table, channels, boxes, box_frame, n, colors, thickness);
    draw_batch_kernel<1><<<blocks, 64, 0, s>>>(table, channels, boxes, box_frame, n, colors, thickness);
    return (int)cudaGetLastError();
}

// ---- rotated crops -----------------------------------------------------------------------------------------------
// One block per chunk of CROP_THREADS * CROP_PIXELS output pixels of one crop: thread 0 sets up the crop's inverse
// map (obb_crop.h, double) in shared memory, then each thread samples pixels CROP_THREADS apart, so a warp writes
// consecutive columns of every output channel plane (coalesced). The frame descriptors travel by value in the kernel
// parameters (no host-to-device copy, no sync): CROP_TABLE_FRAMES per launch, more frames take more launches.
#include "obb_crop.h"

#define CROP_TABLE_FRAMES 64
#define CROP_THREADS 256
#define CROP_PIXELS 4

struct crop_launch {
    obb_crop_params p;
    obb_crop_frame frames[CROP_TABLE_FRAMES];
    int64_t batch_stride;  // elements from one frame to the next of one (B, ...) tensor (frames[0] is frame 0); 0: table
    int32_t first_frame;   // table mode: this launch crops the rows of frames first_frame .. first_frame + n_table - 1
    int32_t n_table;
};

struct crop_u8 {
    typedef uint8_t S;
    static __device__ __forceinline__ float load(const S *p, int64_t i) { return (float)__ldg(p + i); }
    static __device__ __forceinline__ void store(S *p, int64_t i, float v) { p[i] = obb_float_to_u8(v); }
};
struct crop_f16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float load(const S *p, int64_t i) { return obb_half_to_float(__ldg(p + i)); }
    static __device__ __forceinline__ void store(S *p, int64_t i, float v) { p[i] = obb_float_to_half(v); }
};
struct crop_bf16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float load(const S *p, int64_t i) { return obb_bf16_to_float(__ldg(p + i)); }
    static __device__ __forceinline__ void store(S *p, int64_t i, float v) { p[i] = obb_float_to_bf16(v); }
};
struct crop_f32 {
    typedef float S;
    static __device__ __forceinline__ float load(const S *p, int64_t i) { return __ldg(p + i); }
    static __device__ __forceinline__ void store(S *p, int64_t i, float v) { p[i] = v; }
};

__device__ __forceinline__ float crop_pick(uchar4 q, int c)
{
    return (float)(c == 0 ? q.x : (c == 1 ? q.y : (c == 2 ? q.z : q.w)));
}

// VEC4: uint8 frames of 4 contiguous channels, 4-byte aligned pixels (RGBA-like NVMM surfaces): one 32-bit load
// per tap serves every output channel.
template <class IN, class OUT, bool VEC4>
__global__ void __launch_bounds__(CROP_THREADS)
    crop_kernel(const __grid_constant__ crop_launch L, const float *table, int64_t k, typename OUT::S *out,
                int64_t *widths, unsigned long long *status)
{
    __shared__ obb_crop_map m;
    __shared__ obb_crop_frame f;
    __shared__ int live;  // 0: a row of another launch's frames; 1: crop it; 2: an invalid row, all fill
    const int32_t C = L.p.channels, ow = L.p.out_w;
    const int32_t plane = L.p.out_h * ow;
    const int32_t per_block = CROP_THREADS * CROP_PIXELS;
    const int64_t chunks = (plane + per_block - 1) / per_block;
    for (int64_t blk = blockIdx.x; blk < k * chunks; blk += gridDim.x) {
        const int64_t r = blk / chunks;
        const int32_t chunk = (int32_t)(blk - r * chunks);
        if (threadIdx.x == 0) {
            int state = 0;
            if (obb_crop_setup(table + 6 * r, &L.p, &m) != OBB_CROP_OK) {
                state = L.first_frame == 0 ? 2 : 0;  // the first launch fills it and reports it
                if (state && chunk == 0 && status) atomicMin(status, (unsigned long long)r);
            } else if (L.batch_stride) {
                state = 1;
                f = L.frames[0];
                f.data += (uint64_t)((int64_t)m.frame * L.batch_stride * (int64_t)sizeof(typename IN::S));
            } else if (m.frame >= L.first_frame && m.frame < L.first_frame + L.n_table) {
                state = 1;
                f = L.frames[m.frame - L.first_frame];
            }
            if (state && chunk == 0) widths[r] = m.width;
            live = state;
        }
        __syncthreads();
        if (live) {
            typename OUT::S *crop = out + r * C * (int64_t)plane;
            const typename IN::S *src = (const typename IN::S *)(uintptr_t)f.data;
            for (int t = 0; t < CROP_PIXELS; ++t) {
                const int32_t px = chunk * per_block + t * CROP_THREADS + (int32_t)threadIdx.x;
                if (px >= plane) break;
                const int32_t j = px / ow, i = px - j * ow;
                int32_t x0, y0;
                float fx, fy;
                if (live == 2 || i >= m.width || !obb_crop_locate(&m, i, j, f.height, f.width, &x0, &y0, &fx, &fy)) {
                    for (int32_t c = 0; c < C; ++c) OUT::store(crop, px + (int64_t)c * plane, L.p.fill[c]);
                    continue;
                }
                const bool left = x0 >= 0, right = x0 + 1 < f.width, top = y0 >= 0, bottom = y0 + 1 < f.height;
                const int64_t at = (int64_t)y0 * f.stride_y + (int64_t)x0 * f.stride_x;
                if (VEC4) {
                    const uint8_t *b = (const uint8_t *)src;
                    const uchar4 none = make_uchar4(0, 0, 0, 0);
                    const uchar4 q00 = top && left ? __ldg((const uchar4 *)(b + at)) : none;
                    const uchar4 q01 = top && right ? __ldg((const uchar4 *)(b + at + 4)) : none;
                    const uchar4 q10 = bottom && left ? __ldg((const uchar4 *)(b + at + f.stride_y)) : none;
                    const uchar4 q11 = bottom && right ? __ldg((const uchar4 *)(b + at + f.stride_y + 4)) : none;
                    for (int32_t c = 0; c < C; ++c) {
                        const int ch = L.p.channel_index[c];
                        const float fill = L.p.fill[c];
                        const float v = obb_crop_blend(top && left ? crop_pick(q00, ch) : fill,
                                                       top && right ? crop_pick(q01, ch) : fill,
                                                       bottom && left ? crop_pick(q10, ch) : fill,
                                                       bottom && right ? crop_pick(q11, ch) : fill, fx, fy);
                        OUT::store(crop, px + (int64_t)c * plane, v);
                    }
                } else {
                    for (int32_t c = 0; c < C; ++c) {
                        const int64_t q = at + (int64_t)L.p.channel_index[c] * f.stride_c;
                        const float fill = L.p.fill[c];
                        const float v = obb_crop_blend(top && left ? IN::load(src, q) : fill,
                                                       top && right ? IN::load(src, q + f.stride_x) : fill,
                                                       bottom && left ? IN::load(src, q + f.stride_y) : fill,
                                                       bottom && right ? IN::load(src, q + f.stride_y + f.stride_x)
                                                                       : fill,
                                                       fx, fy);
                        OUT::store(crop, px + (int64_t)c * plane, v);
                    }
                }
            }
        }
        __syncthreads();  // the next block's set-up overwrites the shared map
    }
}

template <class IN, class OUT>
static int crop_launch_all(crop_launch &L, const obb_crop_frame *frames, int32_t n_desc, const float *table,
                           int64_t k, void *out, int64_t *widths, unsigned long long *status, bool vec4,
                           cudaStream_t s)
{
    const int64_t per_block = CROP_THREADS * CROP_PIXELS;
    const int64_t blocks = k * ((L.p.out_h * (int64_t)L.p.out_w + per_block - 1) / per_block);
    const unsigned grid = (unsigned)(blocks < (1 << 24) ? blocks : (1 << 24));
    typename OUT::S *o = (typename OUT::S *)out;
    const int32_t parts = L.batch_stride ? 1 : (n_desc + CROP_TABLE_FRAMES - 1) / CROP_TABLE_FRAMES;
    for (int32_t part = 0; part < parts; ++part) {
        L.first_frame = part * CROP_TABLE_FRAMES;
        L.n_table = L.batch_stride ? 1 : (n_desc - L.first_frame < CROP_TABLE_FRAMES ? n_desc - L.first_frame
                                                                                      : CROP_TABLE_FRAMES);
        memcpy(L.frames, frames + L.first_frame, sizeof(obb_crop_frame) * (size_t)L.n_table);
        if (vec4)
            crop_kernel<IN, OUT, true><<<grid, CROP_THREADS, 0, s>>>(L, table, k, o, widths, status);
        else
            crop_kernel<IN, OUT, false><<<grid, CROP_THREADS, 0, s>>>(L, table, k, o, widths, status);
        const int code = (int)cudaGetLastError();
        if (code) return code;
    }
    return 0;
}

template <class IN>
static int crop_dispatch_out(crop_launch &L, const obb_crop_frame *frames, int32_t n_desc, const float *table,
                             int64_t k, void *out, int64_t *widths, unsigned long long *status, bool vec4,
                             cudaStream_t s)
{
    switch (L.p.out_type) {
    case OBB_U8: return crop_launch_all<IN, crop_u8>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    case OBB_F16: return crop_launch_all<IN, crop_f16>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    case OBB_BF16: return crop_launch_all<IN, crop_bf16>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    default: return crop_launch_all<IN, crop_f32>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    }
}

// frames: n_desc host descriptors of device memory (with batch_stride != 0: one, frame b batch_stride elements after
// frame b - 1); table: (k, 6) float32 rows on the device; out: (k, channels, out_h, out_w) of p->out_type; widths:
// (k,) int64; status: NULL, or one word (all ones on entry) that receives the lowest invalid row index.
OBB_EXPORT int obbmeta_cuda_crop(const obb_crop_frame *frames, int32_t n_desc, int64_t batch_stride,
                                 const float *table, int64_t k, const obb_crop_params *p, void *out, int64_t *widths,
                                 unsigned long long *status, void *stream)
{
    if (!obb_crop_params_valid(p, frames, n_desc)) return (int)cudaErrorInvalidValue;
    if (k == 0) return 0;
    crop_launch L;
    memset(&L, 0, sizeof L);
    L.p = *p;
    L.batch_stride = batch_stride;
    bool vec4 = p->in_type == OBB_U8 && (batch_stride % 4) == 0;
    for (int32_t d = 0; d < n_desc && vec4; ++d)
        vec4 = frames[d].channels == 4 && frames[d].stride_c == 1 && frames[d].stride_x == 4 &&
               frames[d].stride_y % 4 == 0 && frames[d].data % 4 == 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (p->in_type) {
    case OBB_U8: return crop_dispatch_out<crop_u8>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    case OBB_F16: return crop_dispatch_out<crop_f16>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    case OBB_BF16: return crop_dispatch_out<crop_bf16>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    default: return crop_dispatch_out<crop_f32>(L, frames, n_desc, table, k, out, widths, status, vec4, s);
    }
}
