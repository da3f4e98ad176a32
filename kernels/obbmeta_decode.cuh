// obbmeta: the fused YOLO-OBB decode on the device (obbmeta_cuda_yolo_obb), with no host synchronisation.
//
// A raw head (B, 4 + nc + 1, N) -> candidates (score > conf, class allowed), counted per (image, class) -> one
// segment per (image, class), each sorted by descending score alone (after the k best per image, when k cuts) -> the
// NMS core of obbmeta_nms_core.cuh (steps 2 to 5) -> per image the kept boxes by descending score, at most max_det,
// with the letterbox inverse.
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

// One pass over the head: per item (anchor, or anchor x class with multi-label) its score and class, and a sort key
// when it is a candidate (score > conf, class allowed), NO_KEY otherwise. With `ranked`, the key is (image, descending
// score) and counts[b] counts image b's candidates (the per-image top-k is taken after sorting); otherwise the key is
// (descending score, item), unique, and counts[g] counts the candidates of (image, class) group g = b * ng + class
// (b * ng with agnostic NMS, ng = 1), the segments that are sorted apart.
__global__ void k_candidates(const float *head, int64_t B, int64_t C, int64_t N, int nc, int multi, int agnostic,
                             float conf, const int *allowed, const float *class_conf, int ranked, uint64_t *key,
                             int64_t *val, float *score, int *label, unsigned long long *count, int64_t *status)
{
    const int64_t per_image = multi ? N * nc : N;
    const int64_t ng = agnostic ? 1 : nc;
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
        if (val) val[i] = i;
        if (!ok) {
            key[i] = NO_KEY;
        } else if (ranked) {
            key[i] = ((uint64_t)b << 32) | descending_bits(best);
            atomicAdd(&count[b], 1ull);
        } else {
            key[i] = ((uint64_t)descending_bits(best) << 32) | (uint64_t)i;  // i < 2^31
            atomicAdd(&count[b * ng + (agnostic ? 0 : cls)], 1ull);
        }
    }
}

constexpr int OFFSET_THREADS = 256;

// One block: the segments of the (image, class) groups from their candidate counts. start[g] (exclusive sums; start[G]
// = all candidates, where the trailing segment of non-candidates begins), nseg = G + 1, incl[g] (the running sum of
// each segment's candidate items and chunks, as the core's k_pairs / k_scan read it), each image's range of
// positions [img_lo, img_hi).
__global__ void __launch_bounds__(OFFSET_THREADS) k_offsets(int64_t G, int64_t ng, int64_t B,
                                                                const unsigned long long *count, Segs g,
                                                                int64_t *img_lo, int64_t *img_hi)
{
    using ScanN = cub::BlockScan<int64_t, OFFSET_THREADS>;
    using ScanI = cub::BlockScan<SegInfo, OFFSET_THREADS>;
    __shared__ union {
        typename ScanN::TempStorage n;
        typename ScanI::TempStorage i;
    } tmp;
    __shared__ int64_t carry_n;
    __shared__ SegInfo carry_i;
    if (threadIdx.x == 0) {
        carry_n = 0;
        carry_i = {0, 0};
    }
    __syncthreads();
    for (int64_t base = 0; base <= G; base += OFFSET_THREADS) {
        const int64_t s = base + threadIdx.x;
        const int64_t len = s < G ? (int64_t)count[s] : 0;
        const int64_t w = (len + TILE - 1) / TILE;
        int64_t before, total_n;
        ScanN(tmp.n).ExclusiveSum(len, before, total_n);
        __syncthreads();
        SegInfo incl, total_i;
        ScanI(tmp.i).InclusiveScan(SegInfo{pair_items(w), w}, incl, SegSum(), total_i);
        const int64_t cn = carry_n;
        const SegInfo ci = carry_i;
        if (s <= G) {
            g.start[s] = cn + before;
            g.incl[s] = SegSum()(ci, incl);
            if (s % ng == 0 && s / ng < B) img_lo[s / ng] = cn + before;
            if (s % ng == 0 && s > 0) img_hi[s / ng - 1] = cn + before;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            carry_n = cn + total_n;
            carry_i = SegSum()(ci, total_i);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) *g.nseg = G + 1;
}

// Each candidate to its group's segment (in any order: the keys are unique, so the sort that follows orders them).
__global__ void k_scatter(int64_t m, int64_t per_image, int64_t ng, int agnostic, const uint64_t *key, const int *label,
                          const int64_t *start, unsigned long long *cursor, uint64_t *out)
{
    GRID_LOOP(i, m) {
        const uint64_t k = key[i];
        if (k == NO_KEY) continue;
        const int64_t grp = (i / per_image) * ng + (agnostic ? 0 : label[i]);
        out[start[grp] + (int64_t)atomicAdd(&cursor[grp], 1ull)] = k;
    }
}

// Sorted position q -> the core's per-position facts: its item (val), (group, descending score) key as k_outputs reads
// it, packed group and segment id; positions of no candidate (q >= start[G]) get NO_GROUP.
__global__ void k_unpack(int64_t n, int64_t G, int64_t per_image, int64_t ng, int agnostic, int label_bits,
                         const uint64_t *sorted, const int *label, Segs g, uint64_t *key_out, int64_t *val_out,
                         int64_t *group)
{
    const int64_t total = g.start[G];
    GRID_LOOP(q, n) {
        if (q >= total) {
            group[q] = NO_GROUP;
            g.segid[q] = (int)(G + 1);
            continue;
        }
        const uint64_t k = sorted[q];
        const int64_t item = (int64_t)(k & 0xffffffffull), b = item / per_image;
        const int64_t cls = agnostic ? 0 : label[item];
        const int64_t grp = (b << label_bits) | cls;
        group[q] = grp;
        g.segid[q] = (int)(b * ng + cls + 1);
        key_out[q] = ((uint64_t)grp << 32) | (k >> 32);
        val_out[q] = item;
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

__global__ void k_zero_decode(int64_t B, int64_t max_det, int64_t n, int64_t count_entries, float *out_boxes,
                              float *out_scores, int64_t *out_labels, int64_t *counts, unsigned long long *count,
                              unsigned long long *cursor, int *kflag, int64_t *img_lo, int64_t *img_hi,
                              int64_t *status)
{
    if (blockIdx.x == 0 && threadIdx.x < 3) status[threadIdx.x] = 0;  // before any kernel that raises a flag
    GRID_LOOP(i, B * max_det * 5) out_boxes[i] = 0.0f;
    GRID_LOOP(i, B * max_det) {
        out_scores[i] = 0.0f;
        out_labels[i] = 0;
    }
    GRID_LOOP(i, B) {
        counts[i] = 0;
        img_lo[i] = img_hi[i] = 0;
    }
    GRID_LOOP(i, count_entries) {
        count[i] = 0;
        if (cursor) cursor[i] = 0;
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

// Output row `rank` of image b: the head's box `item` with the letterbox inverse, its score and class.
__device__ __forceinline__ void write_output(int64_t b, int64_t rank, int64_t item, HeadBoxes load, const float *score,
                                             const int *label, int64_t max_det, double scale, double pad_x,
                                             double pad_y, float *out_boxes, float *out_scores, int64_t *out_labels)
{
    const obb_box box = load(item);
    const int64_t o = b * max_det + rank;
    float *ob = out_boxes + 5 * o;
    ob[0] = (float)((box.cx - pad_x) / scale);
    ob[1] = (float)((box.cy - pad_y) / scale);
    ob[2] = (float)(box.w / scale);
    ob[3] = (float)(box.h / scale);
    ob[4] = (float)box.a;
    out_scores[o] = score[item];
    out_labels[o] = label[item];
}

constexpr int OUTPUT_THREADS = 256;
constexpr int RANK_CAP = 1024;  // kept candidates of an image ranked in shared memory

// Each kept candidate -> its place among its image's kept candidates by (descending score, item), the first max_det
// written. Two kinds of blocks in one launch:
// - the first `rank_blocks`, one image at a time: an image with at most RANK_CAP kept candidates (the usual case) has
//   their (score, item) keys gathered into shared memory (at their kept index, kprefix = exclusive prefix sum of the
//   kept flags) and each ranked by counting the smaller keys (unique keys: a total order); these blocks also write
//   every image's count;
// - the others, over the positions, for the kept candidates of larger images: one warp per kept candidate, a lane per
//   class segment of its image counting that segment's kept candidates before it (a binary search each).
__global__ void __launch_bounds__(OUTPUT_THREADS) k_outputs(
    int64_t n, int64_t B, int rank_blocks, Segs g, const uint64_t *key, const int64_t *val, const int *kflag,
    const int *kprefix, const float *score, const int *label, HeadBoxes load, int label_bits, int64_t max_det,
    const int64_t *img_lo, const int64_t *img_hi, double scale, double pad_x, double pad_y, float *out_boxes,
    float *out_scores, int64_t *out_labels, int64_t *counts)
{
    __shared__ unsigned long long kept_keys[RANK_CAP];
    if ((int)blockIdx.x < rank_blocks) {
        for (int64_t b = blockIdx.x; b < B; b += rank_blocks) {
            const int64_t lo = img_lo[b], hi = img_hi[b], kept = kprefix[hi] - kprefix[lo];
            if (threadIdx.x == 0) counts[b] = kept < max_det ? kept : max_det;
            if (kept == 0 || kept > RANK_CAP) continue;  // (block-uniform)
            for (int64_t q = lo + threadIdx.x; q < hi; q += blockDim.x)
                if (kflag[q]) kept_keys[kprefix[q] - kprefix[lo]] = (key[q] & 0xffffffffull) << 32 | (uint64_t)val[q];
            __syncthreads();
            for (int64_t i = threadIdx.x; i < kept; i += blockDim.x) {
                const unsigned long long mine = kept_keys[i];
                int64_t rank = 0;
                for (int64_t j = 0; j < kept; ++j) rank += kept_keys[j] < mine;  // (one address for all: a broadcast)
                if (rank < max_det)
                    write_output(b, rank, (int64_t)(mine & 0xffffffffull), load, score, label, max_det, scale, pad_x,
                                 pad_y, out_boxes, out_scores, out_labels);
            }
            __syncthreads();
        }
        return;
    }
    const int lane = threadIdx.x % 32;
    const int64_t nseg = *g.nseg, stride = (int64_t)(gridDim.x - rank_blocks) * blockDim.x;
    for (int64_t w0 = (blockIdx.x - rank_blocks) * (int64_t)blockDim.x + threadIdx.x - lane; w0 < n; w0 += stride) {
        unsigned todo = __ballot_sync(FULL, w0 + lane < n && kflag[w0 + lane]);
        while (todo) {
            const int64_t q = w0 + __ffs(todo) - 1;
            todo &= todo - 1;
            const int64_t b = g.group[q] >> label_bits, lo = img_lo[b], hi = img_hi[b];
            if (kprefix[hi] - kprefix[lo] <= RANK_CAP) continue;  // ranked by a block of the first kind
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
            write_output(b, part, my_item, load, score, label, max_det, scale, pad_x, pad_y, out_boxes, out_scores,
                         out_labels);
        }
    }
}

struct DecodeBuffers {
    // ranked:   key1/val1 -(image, score) sort-> key1s/val1s -top k-> key2/val2 -(group, score) sort-> key2s/val2s
    // segments: key1 -scatter-> key1s -sort per segment-> key1 -unpack-> key2s/val2s
    uint64_t *key1, *key1s, *key2, *key2s;
    int64_t *val1, *val1s, *val2, *val2s;
    float *score;
    int *label;
    unsigned long long *count;   // candidates per image (ranked) or per (image, class) group (segments)
    unsigned long long *cursor;  // (segments) candidates scattered so far, per group
    Segs g;
    int64_t *group;
    Core core;
    int *kprefix;
    int64_t *img_lo, *img_hi;
    int64_t *status;  // [kept (unused), flags, pool entries needed], as the NMS core writes them
    void *temp;
    size_t temp_bytes;
};

// CUB's segmented sort stays free of host synchronisation only while a call has few segments: above its partitioning
// threshold (300 segments at the least on any device) it sorts the segments by size and reads their counts back to
// the host. So the segments go to it this many at a time, each call one launch of its kernel that gives every
// segment one block. (The assert names CUB's tuning policies as CCCL 3.0, CUDA 13.0, has them, Policy500 the lowest
// threshold of its chain; a CCCL that renames them fails to build here, to be checked again, rather than sync.)
constexpr int64_t SORT_SEGMENTS_PER_CALL = 256;
static_assert(cub::detail::segmented_sort::policy_hub<uint64_t, cub::NullType>::Policy500::PARTITIONING_THRESHOLD >=
                  SORT_SEGMENTS_PER_CALL,
              "CUB's segmented sort would partition (and synchronise with the host) at SORT_SEGMENTS_PER_CALL");

static int bit_length(int64_t v)
{
    int bits = 0;
    while (v > 0) {
        ++bits;
        v >>= 1;
    }
    return bits;
}

// m items (B x per_image), n = B * k positions after the top-k (candidates beyond are never needed). Two ways to the
// core's segments: without a top-k cut (k = per_image, the usual case), every candidate's (image, class) group is
// counted as it is found, the candidates are scattered to their group's segment and each segment is sorted alone
// (a few launches, whatever the number of anchors); with a cut, the items are sorted by (image, score) first, the k
// best of each image kept, and sorted again by (image, class, score).
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
    const int64_t ng = agnostic ? 1 : nc, G = B * ng;  // (image, class) groups
    DecodeBuffers b = {};
    Arena ar = {measure ? nullptr : (char *)ws, 0};
    b.status = ar.take<int64_t>(3);
    int64_t *const status = b.status;
    b.key1 = ar.take<uint64_t>(m);
    b.key1s = ar.take<uint64_t>(m);
    b.key2s = ar.take<uint64_t>(m);
    b.val2s = ar.take<int64_t>(m);
    if (ranked) {
        b.key2 = ar.take<uint64_t>(m);
        b.val1 = ar.take<int64_t>(m);
        b.val1s = ar.take<int64_t>(m);
        b.val2 = ar.take<int64_t>(m);
    }
    b.score = ar.take<float>(m);
    b.label = ar.take<int>(m);
    const int64_t count_entries = ranked ? B : G;
    b.count = ar.take<unsigned long long>(count_entries);
    b.cursor = ranked ? nullptr : ar.take<unsigned long long>(G);
    b.group = ar.take<int64_t>(n);
    b.g.group = b.group;
    b.g.decode = 1;
    b.g.segid = ar.take<int>(n);
    b.g.nseg = ar.take<int64_t>(1);
    if (ranked) {
        b.g.flags = ar.take<int>(n);
        b.g.start = ar.take<int64_t>(n);
        b.g.info = ar.take<SegInfo>(n);
        b.g.incl = ar.take<SegInfo>(n);
    } else {  // G segments and the trailing one of the non-candidates
        b.g.preset = 1;
        b.g.start = ar.take<int64_t>(G + 1);
        b.g.incl = ar.take<SegInfo>(G + 1);
    }
    core_layout(ar, n, pool_entries, b.core);
    if (class_iou) {  // each (image, class) segment at its class's threshold: the label is its group's low bits
        b.core.class_iou = class_iou;
        b.core.seg_group = b.group;
        b.core.label_mask = ((int64_t)1 << label_bits) - 1;
    }
    b.kprefix = ar.take<int>(n + 1);
    b.img_lo = ar.take<int64_t>(B);
    b.img_hi = ar.take<int64_t>(B);
    const int64_t per_call = G < SORT_SEGMENTS_PER_CALL ? G : SORT_SEGMENTS_PER_CALL;
    size_t most = 0, bytes = 0;
    if (ranked)
        CUB_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const uint64_t *)nullptr, (uint64_t *)nullptr,
                                                (const int64_t *)nullptr, (int64_t *)nullptr, m, 0, key_bits, s));
    else
        CUB_TRY(cub::DeviceSegmentedSort::SortKeys(nullptr, bytes, (const uint64_t *)nullptr, (uint64_t *)nullptr, m,
                                                   per_call, (const int64_t *)nullptr, (const int64_t *)nullptr, s));
    most = bytes > most ? bytes : most;
    CUB_TRY((cudaError_t)exclusive_sum(nullptr, nullptr, n + 1, nullptr, 0, s, &bytes));
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
        int64_t most_items = B * max_det * 5 > n + 1 ? B * max_det * 5 : n + 1;
        most_items = most_items > count_entries ? most_items : count_entries;
        k_zero_decode<<<grid_of(most_items, 256), 256, 0, s>>>(B, max_det, n, count_entries, out_boxes, out_scores,
                                                              out_labels, counts, b.count, b.cursor, b.core.kflag,
                                                              b.img_lo, b.img_hi, status);
    }
    if (m == 0 || n == 0) return finish();
    k_candidates<<<grid_of(m, 256), 256, 0, s>>>(head, B, C, N, nc, multi, agnostic, (float)conf, allowed, class_conf,
                                                 ranked, b.key1, b.val1, b.score, b.label, b.count, status);
    if (ranked) {
        bytes = b.temp_bytes;
        CUB_TRY(cub::DeviceRadixSort::SortPairs(b.temp, bytes, b.key1, b.key1s, b.val1, b.val1s, m, 0, 32 + image_bits, s));
        k_top_k<<<grid_of(m, 256), 256, 0, s>>>(m, b.key1s, b.val1s, b.label, b.count, k, agnostic, label_bits,
                                                b.key2, b.val2);
        bytes = b.temp_bytes;
        CUB_TRY(cub::DeviceRadixSort::SortPairs(b.temp, bytes, b.key2, b.key2s, b.val2, b.val2s, m, 0, key_bits, s));
        // Positions >= n hold no candidate (at most k per image), so the core only looks at the first n.
        k_groups<<<grid_of(n, 256), 256, 0, s>>>(n, b.key2s, b.group, label_bits, b.img_lo, b.img_hi);
    } else {
        k_offsets<<<1, OFFSET_THREADS, 0, s>>>(G, ng, B, b.count, b.g, b.img_lo, b.img_hi);
        k_scatter<<<grid_of(m, 256), 256, 0, s>>>(m, per_image, ng, agnostic, b.key1, b.label, b.g.start, b.cursor,
                                                  b.key1s);
        for (int64_t c0 = 0; c0 < G; c0 += SORT_SEGMENTS_PER_CALL) {
            const int64_t here = G - c0 < SORT_SEGMENTS_PER_CALL ? G - c0 : SORT_SEGMENTS_PER_CALL;
            bytes = b.temp_bytes;
            CUB_TRY(cub::DeviceSegmentedSort::SortKeys(b.temp, bytes, (const uint64_t *)b.key1s, b.key1, m, here,
                                                       (const int64_t *)b.g.start + c0,
                                                       (const int64_t *)b.g.start + c0 + 1, s));
        }
        k_unpack<<<grid_of(n, 256), 256, 0, s>>>(n, G, per_image, ng, agnostic, label_bits, b.key1, b.label, b.g,
                                                 b.key2s, b.val2s, b.group);
    }
    int code = run_core(n, load, b.val2s, nullptr, nullptr, b.g, iou, b.core, status, b.temp, b.temp_bytes, s,
                        nullptr, true);
    if (code) return code;
    CUB_TRY((cudaError_t)exclusive_sum(b.core.kflag, b.kprefix, n + 1, b.temp, b.temp_bytes, s));
    if (max_det > 0) {  // (counts stay 0 otherwise)
        const int rank_blocks = (int)(B < 4096 ? B : 4096);
        k_outputs<<<rank_blocks + grid_of(n, OUTPUT_THREADS), OUTPUT_THREADS, 0, s>>>(
            n, B, rank_blocks, b.g, b.key2s, b.val2s, b.core.kflag, b.kprefix, b.score, b.label, load, label_bits,
            max_det, b.img_lo, b.img_hi, scale, pad_x, pad_y, out_boxes, out_scores, out_labels, counts);
    }
    return finish();
}

}  // namespace obbnms
