// obbmeta: the fused YOLO-OBB decode on the device (obbmeta_cuda_yolo_obb), with no host synchronisation.
//
// A raw head (B, 4 + nc + 1, N) -> candidates (score > conf, class allowed) -> the k best per image -> one segment per
// (image, class) for the NMS core of obbmeta_nms_core.cuh (steps 2 to 5) -> per image the kept boxes by descending
// score, at most max_det, with the letterbox inverse.
#pragma once

#include "obbmeta_nms_core.cuh"

namespace obbnms {

// ---- the head, its candidates and their order -----------------------------------------------------------------------
// A YOLO-OBB head (B, C, N): item i of image b is anchor a (or anchor a, class c with multi-label).
struct HeadBoxes {
    const float *head;
    int64_t C, N, per_image;
    int nc, multi;
    __device__ obb_box operator()(int64_t item) const
    {
        const int64_t b = item / per_image, j = item % per_image, a = multi ? j / nc : j;
        const float *x = head + b * C * N + a;
        obb_box r;
        r.cx = x[0];
        r.cy = x[N];
        r.w = x[2 * N];
        r.h = x[3 * N];
        r.a = x[(C - 1) * N];
        return r;
    }
};

__device__ __forceinline__ uint32_t descending_bits(float v)
{
    const uint32_t u = __float_as_uint(v + 0.0f);
    return ~((u & 0x80000000u) ? ~u : (u | 0x80000000u));  // ascending order of the bits = descending v
}

// One pass over the head: per item (anchor, or anchor x class with multi-label) its score, class and a sort key:
// (image, class, descending score) for a candidate (score > conf, class allowed), NO_KEY otherwise. With `ranked`,
// the key is (image, descending score) first and the per-image top-k is taken after sorting it.
__global__ void k_candidates(const float *head, int64_t B, int64_t C, int64_t N, int nc, int multi, int agnostic,
                             float conf, const int *allowed, const float *class_conf, int label_bits, int ranked,
                             uint64_t *key, int64_t *val,
                             float *score, int *label, unsigned long long *count, int64_t *status)
{
    const int64_t per_image = multi ? N * nc : N;
    GRID_LOOP(i, B * per_image) {
        const int64_t b = i / per_image, j = i % per_image;
        const float *x = head + b * C * N;
        float best;
        int cls;
        bool ok;
        if (multi) {
            const int64_t a = j / nc;
            cls = (int)(j % nc);
            best = x[(4 + cls) * N + a];
            ok = best > (class_conf ? class_conf[cls] : conf);
        } else {
            best = -INFINITY;
            cls = 0;
            bool nan = false;
            for (int c = 0; c < nc; ++c) {
                const float v = x[(4 + c) * N + j];
                nan |= v != v;
                if (v > best) {
                    best = v;
                    cls = c;
                }
            }
            // a NaN score makes the anchor no candidate, as torch's amax does; with class_conf the best class's own
            // threshold (nvinfer's YOLO parsers: the best class first, then its pre-cluster-threshold)
            ok = !nan && best > (class_conf ? class_conf[cls] : conf);
        }
        if (ok && allowed) ok = allowed[cls] != 0;
        if (ok && isinf(best)) raise_flag(status, ST_SCORES);  // an inf score: the CPU decode's NMS refuses it too
        score[i] = best;
        label[i] = cls;
        val[i] = i;
        if (!ok) {
            key[i] = NO_KEY;
        } else if (ranked) {
            key[i] = ((uint64_t)b << 32) | descending_bits(best);
            atomicAdd(&count[b], 1ull);
        } else {
            const uint64_t grp = ((uint64_t)b << label_bits) | (uint64_t)(agnostic ? 0 : cls);
            key[i] = (grp << 32) | descending_bits(best);
        }
    }
}

// After the (image, score) sort: the first k candidates of each image get their (image, class, score) key.
__global__ void k_top_k(int64_t m, const uint64_t *key_in, const int64_t *val_in, const int *label,
                        const unsigned long long *count, int64_t k, int agnostic, int label_bits, uint64_t *key_out,
                        int64_t *val_out)
{
    GRID_LOOP(p, m) {
        const uint64_t kk = key_in[p];
        val_out[p] = val_in[p];
        if (kk == NO_KEY) {
            key_out[p] = NO_KEY;
            continue;
        }
        const int64_t b = (int64_t)(kk >> 32);
        int64_t first = 0;
        for (int64_t o = 0; o < b; ++o) first += (int64_t)count[o];
        if (p - first >= k) {
            key_out[p] = NO_KEY;
            continue;
        }
        const uint64_t grp = ((uint64_t)b << label_bits) | (uint64_t)(agnostic ? 0 : label[val_in[p]]);
        key_out[p] = (grp << 32) | (kk & 0xffffffffull);
    }
}

__global__ void k_zero_decode(int64_t B, int64_t max_det, int64_t n, float *out_boxes, float *out_scores,
                              int64_t *out_labels, int64_t *counts, unsigned long long *count, int *kflag,
                              int64_t *img_lo, int64_t *img_hi, int64_t *status)
{
    if (blockIdx.x == 0 && threadIdx.x < 3) status[threadIdx.x] = 0;  // before any kernel that raises a flag
    GRID_LOOP(i, B * max_det * 5) out_boxes[i] = 0.0f;
    GRID_LOOP(i, B * max_det) {
        out_scores[i] = 0.0f;
        out_labels[i] = 0;
    }
    GRID_LOOP(i, B) {
        counts[i] = 0;
        count[i] = 0;
        img_lo[i] = img_hi[i] = 0;
    }
    GRID_LOOP(i, n + 1) kflag[i] = 0;
}

// The last step: the flags and the pool entries the data needed into outputs of their own, and every count -1 when a
// flag is set (the tables are then not to be read).
__global__ void k_finish_decode(int64_t B, const int64_t *status, int64_t *counts, int64_t *flags_out,
                                int64_t *needed_out)
{
    const int64_t flags = status[1];
    GRID_LOOP(b, B) if (flags) counts[b] = -1;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *flags_out = flags;
        *needed_out = status[2];
    }
}

// Each position's group, and where each image's positions begin and end (images without candidates keep [0, 0)).
__global__ void k_groups(int64_t n, const uint64_t *key, int64_t *group, int label_bits, int64_t *img_lo,
                         int64_t *img_hi)
{
    GRID_LOOP(q, n) {
        const int64_t grp = (int64_t)(key[q] >> 32);
        group[q] = grp;
        if (grp == NO_GROUP) continue;
        const int64_t img = grp >> label_bits;
        if (q == 0 || (int64_t)(key[q - 1] >> 32) >> label_bits != img) img_lo[img] = q;
        const int64_t next = q + 1 < n ? (int64_t)(key[q + 1] >> 32) : NO_GROUP;
        if (next == NO_GROUP || next >> label_bits != img) img_hi[img] = q + 1;
    }
}

// Kept candidate q -> its place among its image's kept candidates by (descending score, item): the kept candidates
// of each class segment that come before it (kprefix = exclusive prefix sum of the kept flags). One warp per kept
// candidate, a lane per class segment (a binary search each), so the rank costs one search, not one per class.
__global__ void k_outputs(int64_t n, int64_t B, Segs g, const uint64_t *key, const int64_t *val, const int *kflag,
                          const int *kprefix, const float *score, const int *label, HeadBoxes load, int label_bits,
                          int64_t max_det, const int64_t *img_lo, const int64_t *img_hi, double scale, double pad_x,
                          double pad_y, float *out_boxes, float *out_scores, int64_t *out_labels, int64_t *counts)
{
    const int lane = threadIdx.x % 32;
    const int64_t nseg = *g.nseg, stride = (int64_t)gridDim.x * blockDim.x;
    GRID_LOOP(b, B) {
        const int64_t kept = kprefix[img_hi[b]] - kprefix[img_lo[b]];
        counts[b] = kept < max_det ? kept : max_det;
    }
    for (int64_t w0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x - lane; w0 < n; w0 += stride) {
        unsigned todo = __ballot_sync(FULL, w0 + lane < n && kflag[w0 + lane]);
        while (todo) {
            const int64_t q = w0 + __ffs(todo) - 1;
            todo &= todo - 1;
            const int64_t b = g.group[q] >> label_bits, lo = img_lo[b], hi = img_hi[b];
            const int64_t own = g.segid[q] - 1, s_last = g.segid[hi - 1] - 1;
            if (kprefix[q] - kprefix[g.start[own]] >= max_det) continue;  // ranked past max_det in its class alone
            const uint64_t my_key = key[q] & 0xffffffffull;
            const int64_t my_item = val[q];
            long long part = 0;
            for (int64_t s = g.segid[lo] - 1 + lane; s <= s_last; s += 32) {
                const int64_t st = g.start[s];
                int64_t before;
                if (s == own) {
                    before = q;
                } else {
                    int64_t a = st, e = seg_end(g, s, nseg, n);
                    while (a < e) {  // first position not before (my_key, my_item)
                        const int64_t mid = (a + e) / 2;
                        const uint64_t mk = key[mid] & 0xffffffffull;
                        if (mk < my_key || (mk == my_key && val[mid] < my_item)) a = mid + 1; else e = mid;
                    }
                    before = a;
                }
                part += kprefix[before] - kprefix[st];
            }
#pragma unroll
            for (int off = 16; off > 0; off /= 2) part += __shfl_xor_sync(FULL, part, off);
            if (part >= max_det || lane != 0) continue;
            const obb_box box = load(my_item);
            const int64_t o = b * max_det + part;
            float *ob = out_boxes + 5 * o;
            ob[0] = (float)((box.cx - pad_x) / scale);
            ob[1] = (float)((box.cy - pad_y) / scale);
            ob[2] = (float)(box.w / scale);
            ob[3] = (float)(box.h / scale);
            ob[4] = (float)box.a;
            out_scores[o] = score[my_item];
            out_labels[o] = label[my_item];
        }
    }
}

struct DecodeBuffers {
    uint64_t *key1, *key1s, *key2, *key2s;
    int64_t *val1, *val1s, *val2, *val2s;
    float *score;
    int *label;
    unsigned long long *count;
    Segs g;
    int64_t *group;
    Core core;
    int *kprefix;
    int64_t *img_lo, *img_hi;
    int64_t *status;  // [kept (unused), flags, pool entries needed], as the NMS core writes them
    void *temp;
    size_t temp_bytes;
};

static int bit_length(int64_t v)
{
    int bits = 0;
    while (v > 0) {
        ++bits;
        v >>= 1;
    }
    return bits;
}

// m items (B x per_image), n = B * k positions after the top-k (candidates beyond are never needed).
static int decode_impl(const float *head, int64_t B, int64_t C, int64_t N, int multi, int agnostic, double conf,
                       double iou, const int *allowed, const double *class_iou, const float *class_conf, int64_t k,
                       int64_t max_det,
                       double scale, double pad_x, double pad_y, void *ws, int64_t ws_bytes, int64_t pool_entries,
                       float *out_boxes, float *out_scores, int64_t *out_labels, int64_t *counts, int64_t *flags_out,
                       int64_t *needed_out, cudaStream_t s, int64_t *ws_need)
{
    const bool measure = ws_need != nullptr;
    const int nc = (int)(C - 5);
    const int64_t per_image = multi ? N * nc : N, m = B * per_image;
    if (k > per_image) k = per_image;
    const int64_t n = B * k;
    const int ranked = k < per_image;
    const int label_bits = agnostic ? 0 : bit_length(nc);
    const int image_bits = bit_length(B);  // B - 1 < 2^image_bits - 1: no group is all ones (NO_GROUP)
    if (image_bits + label_bits > 31 || nc < 1) return (int)cudaErrorInvalidValue;
    const int key_bits = 32 + image_bits + label_bits;
    DecodeBuffers b;
    Arena ar = {measure ? nullptr : (char *)ws, 0};
    b.status = ar.take<int64_t>(3);
    int64_t *const status = b.status;
    b.key1 = ar.take<uint64_t>(m);
    b.val1 = ar.take<int64_t>(m);
    b.key1s = ranked ? ar.take<uint64_t>(m) : nullptr;
    b.val1s = ranked ? ar.take<int64_t>(m) : nullptr;
    b.key2 = ranked ? ar.take<uint64_t>(m) : b.key1;
    b.val2 = ranked ? ar.take<int64_t>(m) : b.val1;
    b.key2s = ar.take<uint64_t>(m);
    b.val2s = ar.take<int64_t>(m);
    b.score = ar.take<float>(m);
    b.label = ar.take<int>(m);
    b.count = ar.take<unsigned long long>(B);
    b.g = Segs{};
    b.group = ar.take<int64_t>(n);
    b.g.flags = ar.take<int>(n);
    b.g.segid = ar.take<int>(n);
    b.g.start = ar.take<int64_t>(n);
    b.g.nseg = ar.take<int64_t>(1);
    b.g.info = ar.take<SegInfo>(n);
    b.g.incl = ar.take<SegInfo>(n);
    b.g.group = b.group;
    b.g.decode = 1;
    core_layout(ar, n, pool_entries, b.core);
    if (class_iou) {  // each (image, class) segment at its class's threshold: the label is its group's low bits
        b.core.class_iou = class_iou;
        b.core.seg_group = b.group;
        b.core.label_mask = ((int64_t)1 << label_bits) - 1;
    }
    b.kprefix = ar.take<int>(n + 1);
    b.img_lo = ar.take<int64_t>(B);
    b.img_hi = ar.take<int64_t>(B);
    size_t most = 0, bytes = 0;
    CUB_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const uint64_t *)nullptr, (uint64_t *)nullptr,
                                            (const int64_t *)nullptr, (int64_t *)nullptr, m, 0, key_bits, s));
    most = bytes > most ? bytes : most;
    CUB_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const int *)nullptr, (int *)nullptr, n + 1, s));
    most = bytes > most ? bytes : most;
    HeadBoxes load = {head, C, N, per_image, nc, multi};
    size_t core = 0;
    CUB_TRY((cudaError_t)run_core(n, load, nullptr, nullptr, nullptr, b.g, iou, b.core, nullptr, nullptr, 0, s, &core,
                                  true));
    most = core > most ? core : most;
    CUB_TRY((cudaError_t)finish_workspace(ar, most, &b.temp, &b.temp_bytes, ws_bytes, ws_need));
    if (measure) return 0;

    const auto finish = [&]() {
        k_finish_decode<<<grid_of(B, 256), 256, 0, s>>>(B, status, counts, flags_out, needed_out);
        return (int)cudaGetLastError();
    };
    {
        const int64_t most_items = B * max_det * 5 > n + 1 ? B * max_det * 5 : n + 1;
        k_zero_decode<<<grid_of(most_items, 256), 256, 0, s>>>(B, max_det, n, out_boxes, out_scores, out_labels, counts,
                                                              b.count, b.core.kflag, b.img_lo, b.img_hi, status);
    }
    if (m == 0 || n == 0) return finish();
    k_candidates<<<grid_of(m, 256), 256, 0, s>>>(head, B, C, N, nc, multi, agnostic, (float)conf, allowed, class_conf,
                                                 label_bits, ranked, b.key1, b.val1, b.score, b.label, b.count, status);
    if (ranked) {
        bytes = b.temp_bytes;
        CUB_TRY(cub::DeviceRadixSort::SortPairs(b.temp, bytes, b.key1, b.key1s, b.val1, b.val1s, m, 0, 32 + image_bits, s));
        k_top_k<<<grid_of(m, 256), 256, 0, s>>>(m, b.key1s, b.val1s, b.label, b.count, k, agnostic, label_bits,
                                                b.key2, b.val2);
    }
    bytes = b.temp_bytes;
    CUB_TRY(cub::DeviceRadixSort::SortPairs(b.temp, bytes, b.key2, b.key2s, b.val2, b.val2s, m, 0, key_bits, s));
    // Positions >= n hold no candidate (at most k per image), so the core only looks at the first n.
    k_groups<<<grid_of(n, 256), 256, 0, s>>>(n, b.key2s, b.group, label_bits, b.img_lo, b.img_hi);
    int code = run_core(n, load, b.val2s, nullptr, nullptr, b.g, iou, b.core, status, b.temp, b.temp_bytes, s,
                        nullptr, true);
    if (code) return code;
    bytes = b.temp_bytes;
    CUB_TRY(cub::DeviceScan::ExclusiveSum(b.temp, bytes, b.core.kflag, b.kprefix, n + 1, s));
    if (max_det > 0)  // (counts stay 0 otherwise)
        k_outputs<<<grid_of(n > B ? n : B, 256), 256, 0, s>>>(n, B, b.g, b.key2s, b.val2s, b.core.kflag, b.kprefix,
                                                              b.score, b.label, load, label_bits, max_det, b.img_lo,
                                                              b.img_hi, scale, pad_x, pad_y, out_boxes, out_scores,
                                                              out_labels, counts);
    return finish();
}

}  // namespace obbnms
