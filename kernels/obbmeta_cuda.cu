// obbmeta: CUDA kernels built on the same geometry headers as the host library (obb_geometry.h, obb_draw.h).
// Plain C ABI for ctypes: device pointers from torch tensors and the caller's cudaStream_t; every launch is
// asynchronous on that stream, and errors are returned as cudaError_t codes.
#include <cuda_runtime.h>
#include <stdint.h>

#include "obb_draw.h"
#include "obb_geometry.h"

#define OBB_EXPORT extern "C" __attribute__((visibility("default")))
#define NMS_BLOCK 64  // bits in an unsigned long long

OBB_EXPORT int obbmeta_cuda_abi_version(void) { return 2; }

// Boxes arrive as float32 or float64 (n, 5); the geometry runs on obb_box (double) either way.
__device__ __forceinline__ obb_box load_box(const float *b) { return obb_box_from_float(b); }
__device__ __forceinline__ obb_box load_box(const double *b) { return obb_box_from_double(b); }

OBB_EXPORT const char *obbmeta_cuda_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

// This library links its own (static) CUDA runtime, whose current device is separate from torch's: the caller
// selects the tensors' device before each call.
OBB_EXPORT int obbmeta_cuda_set_device(int device) { return (int)cudaSetDevice(device); }

// ---- IoU ---------------------------------------------------------------------------------------------------------
template <typename T>
__global__ void iou_matrix_kernel(const T *a, int64_t n, const T *b, int64_t m, T *out, int aligned)
{
    const int64_t total = aligned ? n : n * m;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < total; p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = aligned ? p : p / m, j = aligned ? p : p % m;
        const obb_box bi = load_box(a + 5 * i), bj = load_box(b + 5 * j);
        out[p] = (T)obb_box_iou(&bi, &bj);
    }
}

static int grid_for(int64_t work, int threads)
{
    int64_t blocks = (work + threads - 1) / threads;
    if (blocks > 65535 * 32) blocks = 65535 * 32;
    return blocks < 1 ? 1 : (int)blocks;
}

// a, b, out: float32 (is_double = 0) or float64 (is_double = 1), all three the same.
OBB_EXPORT int obbmeta_cuda_iou(const void *a, int64_t n, const void *b, int64_t m, void *out, int aligned,
                                int is_double, void *stream)
{
    const int64_t work = aligned ? n : n * m;
    if (work == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (is_double)
        iou_matrix_kernel<double><<<grid_for(work, 256), 256, 0, s>>>((const double *)a, n, (const double *)b, m,
                                                                        (double *)out, aligned);
    else
        iou_matrix_kernel<float><<<grid_for(work, 256), 256, 0, s>>>((const float *)a, n, (const float *)b, m,
                                                                       (float *)out, aligned);
    return (int)cudaGetLastError();
}

// ---- NMS ---------------------------------------------------------------------------------------------------------
// Boxes arrive sorted by descending score. mask[i * col_blocks + c] has bit k set when box i (row) suppresses box
// j = c * 64 + k, i.e. j > i, same label (when labels are given) and IoU > threshold.
template <typename T>
__global__ void nms_mask_kernel(int64_t n, const T *boxes, const int64_t *labels, double threshold,
                                unsigned long long *mask, int64_t col_blocks)
{
    const int64_t row_block = blockIdx.y, col_block = blockIdx.x;
    if (row_block > col_block) return;  // below the diagonal: never read by the scan
    __shared__ obb_box cols[NMS_BLOCK];
    __shared__ double col_aabb[NMS_BLOCK * 4];
    __shared__ int64_t col_labels[NMS_BLOCK];
    __shared__ int col_valid[NMS_BLOCK];
    const int64_t col_start = col_block * NMS_BLOCK;
    const int cols_here = (int)min((int64_t)NMS_BLOCK, n - col_start);
    if (threadIdx.x < cols_here) {
        const obb_box src = load_box(boxes + 5 * (col_start + threadIdx.x));
        cols[threadIdx.x] = src;
        col_valid[threadIdx.x] = obb_box_valid(&src);
        obb_box_aabb(&src, col_aabb + 4 * threadIdx.x);
        col_labels[threadIdx.x] = labels ? labels[col_start + threadIdx.x] : 0;
    }
    __syncthreads();
    const int64_t row = row_block * NMS_BLOCK + threadIdx.x;
    if (row >= n) return;
    const obb_box me = load_box(boxes + 5 * row);
    unsigned long long bits = 0;
    if (obb_box_valid(&me)) {
        double box_aabb[4];
        obb_box_aabb(&me, box_aabb);
        const int64_t my_label = labels ? labels[row] : 0;
        const int start = (row_block == col_block) ? (int)threadIdx.x + 1 : 0;
        for (int k = start; k < cols_here; ++k) {
            if (!col_valid[k] || col_labels[k] != my_label) continue;
            const double *o = col_aabb + 4 * k;
            if (o[0] > box_aabb[2] || o[2] < box_aabb[0] || o[1] > box_aabb[3] || o[3] < box_aabb[1]) continue;
            if (obb_box_iou(&me, &cols[k]) > threshold) bits |= 1ULL << k;
        }
    }
    mask[row * col_blocks + col_block] = bits;
}

// Greedy scan on the device, one block: block b of 64 candidates is resolved serially by thread 0 from its
// diagonal words (staged in shared memory), then all threads fold the kept rows into the later words.
__global__ void nms_scan_kernel(int64_t n, int64_t col_blocks, const unsigned long long *mask,
                                unsigned long long *removed, const int64_t *order, int64_t *keep, int64_t *count)
{
    __shared__ unsigned long long diag[NMS_BLOCK];
    __shared__ int64_t kept_rows[NMS_BLOCK];
    __shared__ int kept_here;
    __shared__ int64_t total;
    if (threadIdx.x == 0) total = 0;
    for (int64_t b = 0; b < col_blocks; ++b) {
        const int64_t base = b * NMS_BLOCK;
        if (threadIdx.x < NMS_BLOCK && base + threadIdx.x < n) diag[threadIdx.x] = mask[(base + threadIdx.x) * col_blocks + b];
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long word = removed[b];
            int k = 0;
            for (int bit = 0; bit < NMS_BLOCK && base + bit < n; ++bit) {
                if (word >> bit & 1ULL) continue;
                keep[total++] = order[base + bit];
                kept_rows[k++] = base + bit;
                word |= diag[bit];
            }
            removed[b] = word;
            kept_here = k;
        }
        __syncthreads();
        for (int64_t w = b + 1 + threadIdx.x; w < col_blocks; w += blockDim.x) {
            unsigned long long acc = 0;
            for (int k = 0; k < kept_here; ++k) acc |= mask[kept_rows[k] * col_blocks + w];
            removed[w] |= acc;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) *count = total;
}

// boxes (float32, or float64 when is_double) / labels: sorted by descending score; order: the original index of
// each sorted box. mask: n * col_blocks words (uninitialised is fine); removed: col_blocks words, zeroed by the
// caller.
OBB_EXPORT int obbmeta_cuda_nms(int64_t n, const void *boxes, int is_double, const int64_t *labels,
                                double threshold, const int64_t *order, unsigned long long *mask,
                                unsigned long long *removed, int64_t *keep, int64_t *count, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t col_blocks = (n + NMS_BLOCK - 1) / NMS_BLOCK;
    if (n == 0) return (int)cudaMemsetAsync(count, 0, sizeof(int64_t), s);
    if (col_blocks > 65535) return (int)cudaErrorInvalidValue;  // > 4.19 M boxes: grid limit
    dim3 grid((unsigned)col_blocks, (unsigned)col_blocks);
    if (is_double)
        nms_mask_kernel<double><<<grid, NMS_BLOCK, 0, s>>>(n, (const double *)boxes, labels, threshold, mask,
                                                             col_blocks);
    else
        nms_mask_kernel<float><<<grid, NMS_BLOCK, 0, s>>>(n, (const float *)boxes, labels, threshold, mask,
                                                            col_blocks);
    nms_scan_kernel<<<1, 1024, 0, s>>>(n, col_blocks, mask, removed, order, keep, count);
    return (int)cudaGetLastError();
}

// ---- drawing -----------------------------------------------------------------------------------------------------
// One block per (box, edge); threads stride along the edge's major axis. Pass 1 claims each pixel for the highest
// box index that covers it (atomicMax), pass 2 paints only pixels a box owns and hands the pixel back (-1), so
// crossings resolve as on the host (later boxes on top), the result does not depend on thread timing, and the
// scratch is all -1 again after every call (no per-call fill of a frame-sized buffer).
template <int PASS>
__global__ void draw_kernel(uint8_t *image, int height, int width, int channels, int64_t row_stride,
                            const float *boxes, int64_t n, const uint8_t *colors, double thickness, int *owner)
{
    const int64_t box = blockIdx.x / 4;
    const int k = blockIdx.x % 4;
    __shared__ obb_edge e;
    __shared__ int live;
    if (threadIdx.x == 0) live = box < n && obb_edge_setup(boxes + 5 * box, k, thickness, width, height, &e);
    __syncthreads();
    if (!live) return;
    for (int m = e.m0 + threadIdx.x; m <= e.m1; m += blockDim.x) {
        int lo, hi;
        if (!obb_edge_minor_span(&e, m, width, height, &lo, &hi)) continue;
        for (int v = lo; v <= hi; ++v) {
            const int x = e.major_is_x ? m : v, y = e.major_is_x ? v : m;
            if (!obb_edge_covers(&e, x, y)) continue;
            int *slot = owner + (int64_t)y * width + x;
            if (PASS == 0) {
                atomicMax(slot, (int)box);
            } else if (atomicCAS(slot, (int)box, -1) == (int)box) {
                uint8_t *px = image + (int64_t)y * row_stride + (int64_t)x * channels;
                for (int c = 0; c < channels; ++c) px[c] = colors[box * channels + c];
            }
        }
    }
}

// owner: height * width ints, all -1 on entry (a fresh fill or the scratch of an earlier call); all -1 on return.
OBB_EXPORT int obbmeta_cuda_draw_outlines(uint8_t *image, int height, int width, int channels, int64_t row_stride,
                                          const float *boxes, int64_t n, const uint8_t *colors, double thickness,
                                          int *owner, void *stream)
{
    if (n == 0) return 0;
    if (n > (int64_t)0x7fffffff / 4) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    const unsigned blocks = (unsigned)(n * 4);
    draw_kernel<0><<<blocks, 64, 0, s>>>(image, height, width, channels, row_stride, boxes, n, colors, thickness, owner);
    draw_kernel<1><<<blocks, 64, 0, s>>>(image, height, width, channels, row_stride, boxes, n, colors, thickness, owner);
    return (int)cudaGetLastError();
}
