// obbmeta: CUDA kernels built on the same geometry headers as the host library (obb_geometry.h, obb_draw.h).
// Plain C ABI for ctypes: device pointers from torch tensors and the caller's cudaStream_t; every launch is
// asynchronous on that stream, and errors are returned as cudaError_t codes.
#include <cuda_runtime.h>
#include <stdint.h>

#include "obb_draw.h"
#include "obb_geometry.h"

#define OBB_EXPORT extern "C" __attribute__((visibility("default")))

OBB_EXPORT int obbmeta_cuda_abi_version(void) { return 3; }

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
        out[p] = (T)obb_box_iou(&bi, &bj);  // prepares both boxes: an IoU matrix is not the hot path
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

#include "obbmeta_nms.cuh"

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
