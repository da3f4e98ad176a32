// obbmeta: greedy rotated NMS of (n, 5) boxes on the device (obbmeta_cuda_nms), with no host synchronisation.
//
// Steps 1 and 6 of the data path of obbmeta_nms_core.cuh: the inputs' checks (status flags), the order by descending
// score and then by label (each label a segment), and the kept indices; the core does steps 2 to 5.
#pragma once

#include "obbmeta_nms_core.cuh"

namespace obbnms {

// ---- 1. inputs and order ---------------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ bool value_ok(T v);
template <>
__device__ __forceinline__ bool value_ok<float>(float v) { return isfinite(v); }
template <>
__device__ __forceinline__ bool value_ok<double>(double v) { return fabs(v) <= 1e150; }  // ops/_validate.py's limit

template <typename T>
__global__ void k_nms_inputs(int64_t n, const T *boxes, const T *scores, T *key, int64_t *idx, int *kflag,
                             int64_t *keep, int64_t *status)
{
    GRID_LOOP(i, n) {
        const T s = scores[i];
        key[i] = s + T(0);  // -0.0 -> +0.0: equal scores compare equal, as on the host
        idx[i] = i;
        kflag[i] = 0;
        keep[i] = -1;
        unsigned long long bad = isfinite(s) ? 0 : ST_SCORES;
        for (int k = 0; k < 5; ++k)
            if (!value_ok<T>(boxes[5 * i + k])) bad |= ST_BOXES;
        if (bad) raise_flag(status, bad);
    }
}

__global__ void k_gather_labels(int64_t n, const int64_t *labels, const int64_t *idx, int64_t *lab, int64_t *pos)
{
    GRID_LOOP(q, n) {
        lab[q] = labels[idx[q]];
        pos[q] = q;
    }
}

// ---- 2. the boxes the core prepares, buffers and launch ------------------------------------------------------------
template <typename T>
struct RowBoxes {
    const T *boxes;  // (n, 5)
    __device__ obb_box operator()(int64_t i) const { return load_box(boxes + 5 * i); }
};

struct NmsBuffers {
    void *key_a, *key_b;
    int64_t *idx_a, *idx_b, *lab_a, *lab_b, *pos_a, *pos_b;
    Segs g;
    Core core;
    void *temp;
    size_t temp_bytes;
};

static void nms_layout(Arena &ar, int64_t n, int has_labels, int is_double, int64_t pool_entries, NmsBuffers &b)
{
    const size_t tsize = is_double ? sizeof(double) : sizeof(float);
    b.key_a = ar.take<char>(n * tsize);
    b.key_b = ar.take<char>(n * tsize);
    b.idx_a = ar.take<int64_t>(n);
    b.idx_b = ar.take<int64_t>(n);
    b.lab_a = b.lab_b = b.pos_a = b.pos_b = nullptr;
    b.g = Segs{};
    if (has_labels) {
        b.lab_a = ar.take<int64_t>(n);
        b.lab_b = ar.take<int64_t>(n);
        b.pos_a = ar.take<int64_t>(n);
        b.pos_b = ar.take<int64_t>(n);
        b.g.flags = ar.take<int>(n);
        b.g.segid = ar.take<int>(n);
        b.g.info = ar.take<SegInfo>(n);
    }
    b.g.start = ar.take<int64_t>(n);
    b.g.nseg = ar.take<int64_t>(1);
    b.g.incl = ar.take<SegInfo>(n);
    core_layout(ar, n, pool_entries, b.core);
}

// nms_rotated_padded's count: the kept boxes, or -1 when a flag is set.
__global__ void k_finish_nms(const int64_t *status, int64_t *count_out)
{
    if (threadIdx.x == 0) *count_out = status[1] ? -1 : status[0];
}

template <typename T>
static int nms_impl(int64_t n, const T *boxes, const T *scores, const int64_t *labels, bool has_labels,
                    double threshold, void *ws, int64_t ws_bytes, int64_t pool_entries, int64_t *keep, int64_t *status,
                    int64_t *count_out, cudaStream_t s, int64_t *ws_need)
{
    const bool measure = ws_need != nullptr;
    NmsBuffers b;
    Arena ar = {measure ? nullptr : (char *)ws, 0};
    nms_layout(ar, n, has_labels, sizeof(T) == 8, pool_entries, b);
    b.g.group = has_labels ? b.lab_b : nullptr;
    b.g.decode = 0;
    // CUB's scratch: the largest any step needs (the steps run one after another on the stream).
    size_t most = 0, bytes = 0;
    CUB_TRY(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, (const T *)nullptr, (T *)nullptr,
                                                      (const int64_t *)nullptr, (int64_t *)nullptr, n, 0, (int)sizeof(T) * 8, s));
    most = bytes > most ? bytes : most;
    if (has_labels) {
        CUB_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const int64_t *)nullptr, (int64_t *)nullptr,
                                                (const int64_t *)nullptr, (int64_t *)nullptr, n, 0, 64, s));
        most = bytes > most ? bytes : most;
    }
    CUB_TRY(cub::DeviceSelect::Flagged(nullptr, bytes, (const int64_t *)nullptr, (const int *)nullptr, (int64_t *)nullptr,
                                       (int64_t *)nullptr, n, s));
    most = bytes > most ? bytes : most;
    size_t core = 0;
    CUB_TRY((cudaError_t)run_core(n, RowBoxes<T>{boxes}, nullptr, nullptr, nullptr, b.g, threshold, b.core, nullptr,
                                  nullptr, 0, s, &core, has_labels));
    most = core > most ? core : most;
    CUB_TRY((cudaError_t)finish_workspace(ar, most, &b.temp, &b.temp_bytes, ws_bytes, ws_need));
    if (measure) return 0;

    const auto finish = [&]() {
        if (count_out) k_finish_nms<<<1, 32, 0, s>>>(status, count_out);
        return (int)cudaGetLastError();
    };
    CUB_TRY(cudaMemsetAsync(status, 0, 3 * sizeof(int64_t), s));
    if (n == 0) return finish();
    k_nms_inputs<T><<<grid_of(n, 256), 256, 0, s>>>(n, boxes, scores, (T *)b.key_a, b.idx_a, b.core.kflag, keep,
                                                    status);
    bytes = b.temp_bytes;
    CUB_TRY(cub::DeviceRadixSort::SortPairsDescending(b.temp, bytes, (const T *)b.key_a, (T *)b.key_b, b.idx_a, b.idx_b,
                                                      n, 0, (int)sizeof(T) * 8, s));
    const int64_t *rank = nullptr;
    if (has_labels) {
        k_gather_labels<<<grid_of(n, 256), 256, 0, s>>>(n, labels, b.idx_b, b.lab_a, b.pos_a);
        bytes = b.temp_bytes;
        CUB_TRY(cub::DeviceRadixSort::SortPairs(b.temp, bytes, b.lab_a, b.lab_b, b.pos_a, b.pos_b, n, 0, 64, s));
        rank = b.pos_b;  // position in label order -> rank in score order
    }
    // Without labels there is one segment, and the scan writes the kept indices itself, in score order.
    const int code = run_core(n, RowBoxes<T>{boxes}, b.idx_b, rank, rank, b.g, threshold, b.core, status, b.temp,
                              b.temp_bytes, s, nullptr, has_labels, has_labels ? nullptr : keep);
    if (code) return code;
    if (has_labels) {
        bytes = b.temp_bytes;
        CUB_TRY(cub::DeviceSelect::Flagged(b.temp, bytes, b.idx_b, b.core.kflag, keep, status, n, s));
    }
    return finish();
}

}  // namespace obbnms
