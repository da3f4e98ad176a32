// obbmeta: the greedy rotated NMS core on the device, shared by the NMS (obbmeta_nms.cuh) and the fused YOLO-OBB
// decode (obbmeta_decode.cuh), with no host synchronisation.
//
// Included by obbmeta_cuda.cu (one translation unit), which gives it obb_geometry.h and load_box. Every entry point
// only enqueues work on the caller's stream: buffers have sizes the host knows before the call (the *_sizes functions
// give them), results stay on the device (kept indices padded with -1 and a count; the decode's (B, max_det, ...)
// tables and counts), and errors found in the data (non-finite values, candidate words beyond their buffer) are flags
// (obb_status.h) in a device status word. So a whole post-processing step can be captured in a CUDA graph.
//
// The data path (greedy NMS, the keep set of obbmeta_nms on the host, kernels/geometry_cpu.c):
//   1. sort by descending score (stable: equal scores keep the lower index first), then, with labels, stably by
//      label: every (label) group is a contiguous "segment" in score order;
//   2. prepare each box once (obb_prep: trigonometry, bounds, area) and keep its bounds rounded outwards to float;
//   3. candidate words: one thread per row against chunks of 64 later columns (the upper triangle, in items of 256
//      rows x 256 columns), comparing float bounds only; every (row, chunk) whose bounds meet somewhere becomes one
//      word of candidate bits in a pool. Only those words are ever stored: no N x N matrix of any kind;
//   4. exact test, 1 to 32 lanes per candidate word (as many as the launch can spare): each candidate bit asks
//      obb_prep_suppresses (the host's own predicate: bounds, an area bound, separating axes, then the clipping in
//      double) and the word is rewritten with the answers. Words of a row's own chunk go, transposed, to a word per
//      column ("which earlier boxes of my chunk suppress me"); the others are grouped by the chunk of columns they
//      cover;
//   5. greedy scan, one block per segment, 64 boxes at a time: a chunk's removed bits are the OR of its column
//      group's words whose rows were kept (the block reads them one chunk ahead), then the chunk is resolved in one
//      warp by a fixed-point iteration on its transposed words (a few ballots);
//   6. kept indices in score order: written by the scan itself for one segment (no labels), else kept flags ->
//      indices by stream compaction.
// Memory is linear in the boxes plus 32 bytes per candidate word. The pool's size is given by the caller; data that
// needs more sets a status flag and says how much (the sized entry points then run once more with that).
//
// Steps 1 (the order) and 6 are the NMS's (obbmeta_nms.cuh) or the decode's (obbmeta_decode.cuh); this header holds
// the segments, steps 2 to 5 (run_core) and the workspace helpers. The segments come from the groups of the order
// (flags, a scan, starts, then each segment's sizes summed), or ready-made (Segs::preset: the decode counts its
// (image, class) groups before it sorts, so it knows them already).
#pragma once

#include <atomic>

#include <cub/cub.cuh>

#include "obb_status.h"

namespace obbnms {

constexpr int TILE = 64;              // boxes per chunk = columns per word = bits per word
constexpr int PAIR_THREADS = 256;     // rows of one candidate item (one thread each)
constexpr int PAIR_CHUNKS = PAIR_THREADS / TILE;
constexpr int SCAN_THREADS = 512;     // one block per segment
constexpr int SCAN_AHEAD = 4;         // column words each scan thread holds in registers, loaded one chunk ahead
constexpr int SCAN_SHARED_WORDS = 512;  // kept bits of a segment up to 32768 boxes stay in shared memory
constexpr unsigned FULL = 0xffffffffu;
constexpr uint64_t NO_KEY = ~0ull;  // decode: a sort key that is not a candidate (sorts last)
constexpr int64_t NO_GROUP = 0xffffffffLL;  // its group (NO_KEY >> 32)

// status[0]: kept boxes (NMS); status[1]: flags (obb_status.h); status[2]: candidate words the data needed (pool
// entries).
enum : unsigned long long {
    ST_BOXES = OBB_STATUS_BOXES,
    ST_SCORES = OBB_STATUS_SCORES,
    ST_OVERFLOW = OBB_STATUS_OVERFLOW,
};

struct SegInfo {
    int64_t items, width;  // candidate items over the upper triangle, W = ceil(L / 64) chunks
};
struct SegSum {
    __host__ __device__ SegInfo operator()(const SegInfo &a, const SegInfo &b) const
    {
        return {a.items + b.items, a.width + b.width};
    }
};

// Where the segments are: positions 0..n-1 in their final order.
struct Segs {
    const int64_t *group;  // group of each position (non-decreasing), or NULL: one segment [0, n)
    int decode;            // groups equal to NO_GROUP are not candidates (their segment is empty)
    int preset;            // start, nseg, segid and incl are already set (the decode's (image, class) segments,
                           // counted before the sort): no segment machinery, no info to fill
    int *flags;            // 1 where a segment starts
    int *segid;            // inclusive sum of flags: segment of a position, + 1
    int64_t *start;        // first position of each segment
    int64_t *nseg;         // number of segments (device scalar)
    SegInfo *info;         // per segment
    SegInfo *incl;         // its inclusive prefix sum
};

// Candidate items of a segment of w chunks: groups of PAIR_CHUNKS chunks, (row group, column group) pairs over the
// upper triangle, diagonal included.
__host__ __device__ __forceinline__ int64_t pair_items(int64_t w)
{
    const int64_t groups = (w + PAIR_CHUNKS - 1) / PAIR_CHUNKS;
    return groups * (groups + 1) / 2;
}

// OR of a 32-bit value over the warp (all lanes present): one instruction from sm_80 on, shuffles before.
__device__ __forceinline__ unsigned warp_or(unsigned v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_or_sync(FULL, v);
#else
    for (int off = 16; off > 0; off /= 2) v |= __shfl_xor_sync(FULL, v, off);
    return v;
#endif
}

// The same over a 64-bit value, as two 32-bit halves.
__device__ __forceinline__ unsigned long long warp_or64(unsigned long long v)
{
    return (unsigned long long)warp_or((unsigned)(v >> 32)) << 32 | warp_or((unsigned)v);
}

// Bit `row` of a bit set stored as 64-bit words.
__device__ __forceinline__ bool bit_at(const unsigned long long *bits, uint32_t row)
{
    return bits[row / TILE] >> (row % TILE) & 1ull;
}

__device__ __forceinline__ void raise_flag(int64_t *status, unsigned long long bit)
{
    atomicOr(reinterpret_cast<unsigned long long *>(status) + 1, bit);
}

__device__ __forceinline__ int64_t seg_end(const Segs &g, int64_t s, int64_t nseg, int64_t n)
{
    return s + 1 < nseg ? g.start[s + 1] : n;
}

#define GRID_LOOP(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

// ---- 1. segments of the order -----------------------------------------------------------------------------------
__global__ void k_seg_flags(int64_t n, const int64_t *group, int *flags)
{
    GRID_LOOP(q, n) flags[q] = q == 0 || group[q] != group[q - 1];
}

__global__ void k_seg_starts(int64_t n, Segs g)
{
    GRID_LOOP(q, n) {
        if (g.flags[q]) g.start[g.segid[q] - 1] = q;
        if (q == n - 1) *g.nseg = g.segid[q];
    }
}

// ---- 2. prepared boxes and segment sizes ------------------------------------------------------------------------
// The buffers of steps 2 to 5.
struct Core {
    obb_prep *prep;
    float4 *bounds;            // per position: its bounds (x1, y1, x2, y2) rounded outwards; empty for invalid boxes
    unsigned long long *diagT; // per position: the boxes of its own chunk that suppress it (bit = row in the chunk)
    ulonglong2 *pool;          // candidate words: x = chunk column << 32 | row in segment, y = candidate bits, then
                               // the suppressed ones (0 for a row's own chunk: those went to diagT)
    ulonglong2 *grouped;       // the non-zero words right of the diagonal, grouped by chunk column
    int64_t pool_entries;      // room in pool (and in grouped)
    unsigned long long *pool_count;
    int *col_count;            // per chunk column (segments' columns one after another), then a 0
    int *col_start;            // exclusive prefix sum of col_count
    int64_t *col_pos;          // position of a chunk column's first box
    int64_t *col_seg;          // position of its segment's first box
    int64_t columns;           // entries of col_count (>= the segments' chunks, + 1)
    int *kflag;
    unsigned long long *kept_global;  // kept bits of segments too large for shared memory
    // Per-class thresholds (the decode's class_iou), or NULL: every segment at run_core's threshold. A segment's
    // class is seg_group[its first position] & label_mask.
    const double *class_iou;
    const int64_t *seg_group;
    int64_t label_mask;
};

// Position q: the box at order[q] (order2 given: order[order2[q]]) prepared; and segment q's size, when q is one.
template <typename Loader>
__global__ void k_prepare(int64_t n, Loader load, const int64_t *order, const int64_t *order2, Segs g, Core core,
                          int64_t *status)
{
    GRID_LOOP(k, core.columns) core.col_count[k] = 0;
    if (blockIdx.x == 0 && threadIdx.x == 0) *core.pool_count = 0;
    GRID_LOOP(q, n) {
        core.diagT[q] = 0;
        // Bounds rounded outwards, so that bounds that meet in double meet in float too; invalid boxes and decode
        // positions that are no candidate (in no segment, their prep never read) get empty ones: they meet nothing.
        float4 bounds = make_float4(INFINITY, INFINITY, -INFINITY, -INFINITY);
        if (!(g.decode && g.group[q] == NO_GROUP)) {
            const int64_t o = order2 ? order[order2[q]] : order[q];
            const obb_box box = load(o);
            const obb_prep p = obb_prep_make(&box);
            core.prep[q] = p;
            if (p.valid)
                bounds = make_float4(__double2float_rd(p.x1), __double2float_rd(p.y1), __double2float_ru(p.x2),
                                     __double2float_ru(p.y2));
            if (g.decode &&
                !(isfinite(box.cx) && isfinite(box.cy) && isfinite(box.w) && isfinite(box.h) && isfinite(box.a)))
                raise_flag(status, ST_BOXES);
        }
        core.bounds[q] = bounds;
        const int64_t nseg = g.group ? *g.nseg : 1;
        SegInfo info = {0, 0};
        if (q < nseg && !g.preset) {
            const int64_t st = g.group ? g.start[q] : 0;
            int64_t len = seg_end(g, q, nseg, n) - st;
            if (g.decode && g.group[st] == NO_GROUP) len = 0;
            const int64_t w = (len + TILE - 1) / TILE;
            info = {pair_items(w), w};
        }
        if (!g.group) {
            if (q == 0) {
                g.start[0] = 0;
                *g.nseg = 1;
                g.incl[0] = info;  // one segment: its prefix is itself
            }
        } else if (!g.preset) {
            g.info[q] = info;
        }
    }
}

// ---- 3. candidate words ------------------------------------------------------------------------------------------
// Item (r, c), c >= r, of a segment: rows r * PAIR_THREADS.. (one thread each) against the PAIR_CHUNKS column chunks
// of group c (their bounds in shared memory). A thread keeps one word per chunk right of its own (and the later
// columns of its own chunk) where the bounds meet anywhere.
__global__ void __launch_bounds__(PAIR_THREADS) k_pairs(int64_t n, Segs g, Core core)
{
    __shared__ float4 cols[PAIR_THREADS];
    __shared__ int found;
    __shared__ unsigned long long base;
    const int64_t nseg = *g.nseg;
    const int64_t total = g.incl[nseg - 1].items;
    for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
        // Every thread finds the item's place itself (the same loads for all: broadcasts, no barrier).
        int64_t lo = 0, hi = nseg - 1;  // the segment holding item t: first s with incl[s].items > t
        while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (g.incl[mid].items > t) hi = mid; else lo = mid + 1;
        }
        const int64_t st = g.start[lo], len = seg_end(g, lo, nseg, n) - st, w = (len + TILE - 1) / TILE;
        const int64_t groups = (w + PAIR_CHUNKS - 1) / PAIR_CHUNKS;
        const int64_t local = t - (g.incl[lo].items - pair_items(w));
        auto row_first = [groups](int64_t r) { return r * groups - r * (r - 1) / 2; };  // row group r's first item
        int64_t a = 0, b = groups - 1;  // the row group: last r with row_first(r) <= local
        while (a < b) {
            const int64_t mid = (a + b + 1) / 2;
            if (row_first(mid) <= local) a = mid; else b = mid - 1;
        }
        const int64_t r = a, cg = r + local - row_first(r);
        const int64_t c0 = cg * PAIR_CHUNKS, col0 = g.incl[lo].width - w;  // first chunk, first segment column
        const int cols_here = (int)min((int64_t)PAIR_THREADS, len - c0 * TILE);
        if (threadIdx.x < cols_here) cols[threadIdx.x] = core.bounds[st + c0 * TILE + threadIdx.x];
        if (threadIdx.x == 0) found = 0;
        if (r == 0 && threadIdx.x < PAIR_CHUNKS && c0 + threadIdx.x < w) {
            core.col_pos[col0 + c0 + threadIdx.x] = st + (c0 + threadIdx.x) * TILE;
            core.col_seg[col0 + c0 + threadIdx.x] = st;
        }
        __syncthreads();
        const int64_t row = r * PAIR_THREADS + threadIdx.x;  // in the segment
        const int64_t own = row / TILE;
        unsigned long long bits[PAIR_CHUNKS];
        int words = 0;
#pragma unroll
        for (int k = 0; k < PAIR_CHUNKS; ++k) bits[k] = 0;
        if (row < len) {
            const float4 rb = core.bounds[st + row];
#pragma unroll
            for (int k = 0; k < PAIR_CHUNKS; ++k) {
                const int64_t c = c0 + k;
                if (c < own || c * TILE >= len) continue;
                const int first = c == own ? (int)(row % TILE) + 1 : 0;  // only later boxes count
                const int last = (int)min((int64_t)TILE, len - c * TILE);
                unsigned long long m = 0;
                for (int j = first; j < last; ++j) {
                    const float4 q = cols[k * TILE + j];
                    if (!(q.x > rb.z || q.z < rb.x || q.y > rb.w || q.w < rb.y)) m |= 1ull << j;
                }
                bits[k] = m;
                words += m != 0;
            }
        }
        const int slot = words ? atomicAdd(&found, words) : 0;
        __syncthreads();
        if (threadIdx.x == 0 && found) base = atomicAdd(core.pool_count, (unsigned long long)found);
        __syncthreads();
        unsigned long long at = base + slot;
#pragma unroll
        for (int k = 0; k < PAIR_CHUNKS; ++k) {
            if (!bits[k]) continue;
            if (at < (unsigned long long)core.pool_entries)
                core.pool[at] = make_ulonglong2((unsigned long long)(col0 + c0 + k) << 32 | (unsigned long long)row,
                                                bits[k]);
            ++at;
        }
    }
}

// ---- 4. exact test -----------------------------------------------------------------------------------------------
// G lanes per candidate word (G a power of two up to 32, as many as the launch has threads to spare: few words with
// many bits, as a decode's clustered classes give, are spread over many lanes), each taking every G-th candidate bit.
__global__ void k_exact(double threshold, Core core)
{
    const unsigned long long used = *core.pool_count;
    if (used > (unsigned long long)core.pool_entries) return;  // flagged by k_group
    const int64_t threads = (int64_t)gridDim.x * blockDim.x, warps = threads / 32;
    int shift = 0;  // G = 1 << shift
    while (shift < 5 && (int64_t)(2 << shift) * (int64_t)used <= threads) ++shift;
    const int G = 1 << shift, lane = threadIdx.x % 32, sub = lane & (G - 1), per_warp = 32 >> shift;
    const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    for (int64_t w0 = warp * per_warp; w0 < (int64_t)used; w0 += warps * per_warp) {  // warp-uniform
        const int64_t i = w0 + (lane >> shift);
        ulonglong2 e = make_ulonglong2(0, 0);
        if (i < (int64_t)used) e = core.pool[i];
        const int64_t col = (int64_t)(e.x >> 32), row = (int64_t)(uint32_t)e.x;
        unsigned long long word = 0;
        int64_t st = 0, cp = 0;  // the segment's first box, the chunk's first box
        if (e.y) {
            st = core.col_seg[col];
            cp = core.col_pos[col];
            const obb_prep k = core.prep[st + row];
            const double thr = core.class_iou ? core.class_iou[core.seg_group[st] & core.label_mask] : threshold;
            // Lane `sub` takes candidates sub, sub + G, ...: each lane walks only its own bits, so the lanes' tests
            // run side by side (walking all bits in step, with one lane working per bit, would run them one by one).
            unsigned long long bits = e.y;
            for (int d = 0; d < sub && bits; ++d) bits &= bits - 1;
            while (bits) {
                const int j = __ffsll((long long)bits) - 1;
                const obb_prep r = core.prep[cp + j];  // one batch of loads, then registers
                if (obb_prep_suppresses(&k, &r, thr)) word |= 1ull << j;
                for (int d = 0; d < G && bits; ++d) bits &= bits - 1;
            }
        }
        for (int off = G / 2; off > 0; off /= 2) word |= __shfl_xor_sync(FULL, word, off);
        if (sub != 0 || !e.y) continue;
        if (row / TILE == (cp - st) / TILE) {  // the row's own chunk: transposed, for the scan's resolve
            for (unsigned long long m = word; m; m &= m - 1)
                atomicOr(&core.diagT[cp + __ffsll((long long)m) - 1], 1ull << (row % TILE));
            word = 0;
        } else if (word) {
            atomicAdd(&core.col_count[col], 1);
        }
        core.pool[i].y = word;
    }
}

// Non-zero words -> grouped by chunk column (col_start: where each column's words begin). col_count counts down.
__global__ void k_group(Core core, int64_t *status)
{
    const unsigned long long used = *core.pool_count;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        status[2] = (int64_t)used;
        if (used > (unsigned long long)core.pool_entries) raise_flag(status, ST_OVERFLOW);
    }
    if (used > (unsigned long long)core.pool_entries) return;
    GRID_LOOP(i, (int64_t)used) {
        const ulonglong2 e = core.pool[i];
        if (!e.y) continue;
        const int64_t col = (int64_t)(e.x >> 32);
        core.grouped[core.col_start[col] + atomicSub(&core.col_count[col], 1) - 1] = e;
    }
}

// ---- 5. greedy scan ------------------------------------------------------------------------------------------------
// The words one scan step reads ahead: column c's words (SCAN_AHEAD per thread), its range, the end of column c + 1,
// and (warp 0) chunk c's transposed words. Two sets alternate, so that no register waits for a load of its own step.
struct ScanSet {
    uint32_t row[SCAN_AHEAD];
    unsigned long long word[SCAN_AHEAD];
    unsigned long long t_lo, t_hi;
    int64_t e0, e1, end_next;
    int64_t flag_lo, flag_hi, idx_lo, idx_hi;  // (warp 0) where the chunk's kept flags go, the kept indices
};

// One block per segment. Chunk b's removed bits are the OR of column b's words whose rows (all in chunks before b)
// were kept: every thread holds up to SCAN_AHEAD of them, loaded while chunk b - 1 was resolved, and ORs those whose
// kept bit is set, then the block's threads OR theirs together. Then one warp resolves the chunk: K = the candidates
// that no member of K before them suppresses, iterated from K = all candidates; the fixed point is the greedy answer
// (after t rounds the first t boxes are settled, and rounds stop as soon as K repeats, mostly after two or three).
// With `keep` (one segment, the plain NMS), warp 0 also writes the kept indices (order[position]) in score order and
// their count to status[0].
__global__ void __launch_bounds__(SCAN_THREADS) k_scan(int64_t n, Segs g, Core core, const int64_t *rank,
                                                       const int64_t *order, int64_t *keep, int64_t *status)
{
    __shared__ unsigned long long kept_shared[SCAN_SHARED_WORDS];
    __shared__ unsigned long long partial[SCAN_THREADS / 32];  // each warp's removed bits of the current chunk
    if (status[1] & ST_OVERFLOW) return;
    const int tid = threadIdx.x, lane = tid % 32;
    const int64_t nseg = *g.nseg;
    for (int64_t s = blockIdx.x; s < nseg; s += gridDim.x) {
        const int64_t w = g.incl[s].width - (s ? g.incl[s - 1].width : 0);
        if (w == 0) continue;  // not candidates (decode)
        const int64_t st = g.start[s], len = seg_end(g, s, nseg, n) - st, col0 = g.incl[s].width - w;
        unsigned long long *kept_bits = w <= SCAN_SHARED_WORDS ? kept_shared : core.kept_global + col0;
        int64_t kept_count = 0;
        // Column c's words are grouped[col_start[col0 + c] .. col_start[col0 + c + 1]); column 0 has none.
        ScanSet A, B;
#pragma unroll
        for (int k = 0; k < SCAN_AHEAD; ++k) {
            A.row[k] = 0;
            A.word[k] = 0;
        }
        A.e0 = core.col_start[col0];
        A.e1 = core.col_start[col0 + 1];
        A.end_next = w > 1 ? core.col_start[col0 + 2] : A.e1;
        auto chunk_ahead = [&](int64_t c, ScanSet &set) {  // warp 0: chunk c's transposed words and destinations
            const int64_t p_lo = st + c * TILE + lane, p_hi = p_lo + 32;
            const bool lo = c * TILE + lane < len, hi = c * TILE + lane + 32 < len;
            set.t_lo = lo ? core.diagT[p_lo] : 0;
            set.t_hi = hi ? core.diagT[p_hi] : 0;
            set.flag_lo = lo && rank ? rank[p_lo] : p_lo;
            set.flag_hi = hi && rank ? rank[p_hi] : p_hi;
            set.idx_lo = lo && keep ? order[p_lo] : 0;
            set.idx_hi = hi && keep ? order[p_hi] : 0;
        };
        if (tid < 32) chunk_ahead(0, A);
        auto step = [&](int64_t b, ScanSet &cur, ScanSet &nxt) {
            // Ahead: column b + 1's words and range, the end of column b + 2, chunk b + 1's transposed words.
            nxt.e0 = cur.e1;
            nxt.e1 = cur.end_next;
            nxt.end_next = nxt.e1;
            if (b + 2 < w) nxt.end_next = core.col_start[col0 + b + 3];
#pragma unroll
            for (int k = 0; k < SCAN_AHEAD; ++k) {
                const int64_t e = nxt.e0 + tid + (int64_t)k * SCAN_THREADS;
                nxt.row[k] = 0;
                nxt.word[k] = 0;
                if (b + 1 < w && e < nxt.e1) {
                    const ulonglong2 en = core.grouped[e];
                    nxt.row[k] = (uint32_t)en.x;
                    nxt.word[k] = en.y;
                }
            }
            if (tid < 32 && b + 1 < w) chunk_ahead(b + 1, nxt);
            // This chunk's removed bits.
            unsigned long long part = 0;
#pragma unroll
            for (int k = 0; k < SCAN_AHEAD; ++k)
                if (cur.word[k] && bit_at(kept_bits, cur.row[k])) part |= cur.word[k];
            for (int64_t e = cur.e0 + tid + (int64_t)SCAN_AHEAD * SCAN_THREADS; e < cur.e1; e += SCAN_THREADS) {
                const ulonglong2 en = core.grouped[e];  // a column with more words than the block holds
                if (bit_at(kept_bits, (uint32_t)en.x)) part |= en.y;
            }
            // (A 64-bit atomicOr in shared memory is a compare-and-swap loop: each warp ORs its lanes with two warp
            // reductions instead, and warp 0 combines the warps' words.)
            part = warp_or64(part);
            if (lane == 0) partial[tid / 32] = part;
            __syncthreads();
            if (tid < 32) {
                const unsigned long long removed = warp_or64(lane < SCAN_THREADS / 32 ? partial[lane] : 0);
                const int64_t row0 = b * TILE;
                const int rows_here = (int)min((int64_t)TILE, len - row0);
                const unsigned long long valid = rows_here == TILE ? ~0ull : ((1ull << rows_here) - 1);
                const unsigned long long cand = valid & ~removed;
                const bool c_lo = cand >> lane & 1ull, c_hi = cand >> (lane + 32) & 1ull;
                unsigned long long kept = cand;
                for (;;) {
                    const unsigned lo = __ballot_sync(FULL, c_lo && !(cur.t_lo & kept));
                    const unsigned hi = __ballot_sync(FULL, c_hi && !(cur.t_hi & kept));
                    const unsigned long long next = (unsigned long long)hi << 32 | lo;
                    if (next == kept) break;
                    kept = next;
                }
                if (lane == 0) kept_bits[b] = kept;
                const bool k_lo = kept >> lane & 1ull, k_hi = kept >> (lane + 32) & 1ull;
                if (k_lo) core.kflag[cur.flag_lo] = 1;
                if (k_hi) core.kflag[cur.flag_hi] = 1;
                if (keep) {
                    const unsigned long long below = (1ull << lane) - 1;
                    if (k_lo) keep[kept_count + __popcll(kept & below)] = cur.idx_lo;
                    if (k_hi) keep[kept_count + __popcll(kept & (below << 32 | 0xffffffffull))] = cur.idx_hi;
                    kept_count += __popcll(kept);
                }
            }
            __syncthreads();
        };
        for (int64_t b = 0; b < w; b += 2) {
            step(b, A, B);
            if (b + 1 < w) step(b + 1, B, A);
        }
        if (keep && tid == 0) status[0] = kept_count;
    }
}

// ---- launch helpers ----------------------------------------------------------------------------------------------
// Buffers carved from one workspace; the same walk with base == NULL measures it.
struct Arena {
    char *base;
    size_t off;
    template <typename T>
    T *take(size_t count)
    {
        off = (off + 255) & ~(size_t)255;
        T *p = base ? reinterpret_cast<T *>(base + off) : nullptr;
        off += count * sizeof(T);
        return p;
    }
};

// The device's SM count and each kernel's resident blocks per SM, read once per device (host calls of a few
// microseconds each that every launch would otherwise repeat). Racing first calls store the same value.
constexpr int CACHED_DEVICES = 64;

static int current_device()
{
    int dev = 0;
    return cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < CACHED_DEVICES ? dev : -1;
}

static int sm_count()
{
    static std::atomic<int> cache[CACHED_DEVICES];
    const int dev = current_device();
    if (dev >= 0) {
        const int known = cache[dev].load(std::memory_order_relaxed);
        if (known > 0) return known;
    }
    int sms = 0;
    if (dev < 0 || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
        return 80;
    cache[dev].store(sms, std::memory_order_relaxed);
    return sms;
}

// A grid of persistent blocks for `kernel`: as many as the device holds at once (blocks that would wait for a second
// wave only to find no work left cost a wave each). `cache`: the call site's per-device record of blocks per SM.
template <typename Kernel>
static int resident_grid(Kernel kernel, int threads, int sms, std::atomic<int> *cache)
{
    const int dev = current_device();
    int per_sm = dev >= 0 ? cache[dev].load(std::memory_order_relaxed) : 0;
    if (per_sm < 1) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess || per_sm < 1)
            return sms;  // (not recorded: asked again next time)
        if (dev >= 0) cache[dev].store(per_sm, std::memory_order_relaxed);
    }
    return per_sm * sms;
}

static int grid_of(int64_t n, int threads)
{
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 65535LL * 32) blocks = 65535LL * 32;
    return blocks < 1 ? 1 : (int)blocks;
}

#define CUB_TRY(call)                        \
    do {                                     \
        const cudaError_t e_ = (call);       \
        if (e_ != cudaSuccess) return (int)e_; \
    } while (0)

// Exclusive prefix sums of int counts. Up to one tile of SMALL_SCAN_THREADS x SMALL_SCAN_ITEMS entries in one launch
// of one block; more with CUB's device-wide scan (two launches), which is faster from there on (measured on an H200:
// one tile 2.0 us, three tiles in a row 17.6 us against CUB's 3.9). Neither needs a host synchronisation.
constexpr int SMALL_SCAN_THREADS = 1024;
constexpr int SMALL_SCAN_ITEMS = 8;
constexpr int64_t SMALL_SCAN = (int64_t)SMALL_SCAN_THREADS * SMALL_SCAN_ITEMS;

__global__ void __launch_bounds__(SMALL_SCAN_THREADS) k_small_exclusive_sum(const int *in, int *out, int count)
{
    using Scan = cub::BlockScan<int, SMALL_SCAN_THREADS>;
    __shared__ typename Scan::TempStorage tmp;
    const int first = threadIdx.x * SMALL_SCAN_ITEMS;
    int v[SMALL_SCAN_ITEMS];
#pragma unroll
    for (int j = 0; j < SMALL_SCAN_ITEMS; ++j) v[j] = first + j < count ? in[first + j] : 0;
    Scan(tmp).ExclusiveSum(v, v);
#pragma unroll
    for (int j = 0; j < SMALL_SCAN_ITEMS; ++j)
        if (first + j < count) out[first + j] = v[j];
}

// out[i] = in[0] + ... + in[i - 1] for i < count. Measuring (`need` given): the CUB scratch it needs (0 when small).
static int exclusive_sum(const int *in, int *out, int64_t count, void *temp, size_t temp_bytes, cudaStream_t s,
                         size_t *need = nullptr)
{
    if (count <= SMALL_SCAN) {
        if (need) *need = 0;
        else if (count > 0) k_small_exclusive_sum<<<1, SMALL_SCAN_THREADS, 0, s>>>(in, out, (int)count);
        return 0;
    }
    size_t bytes = need ? 0 : temp_bytes;
    CUB_TRY(cub::DeviceScan::ExclusiveSum(need ? nullptr : temp, bytes, in, out, count, s));
    if (need) *need = bytes;
    return 0;
}

// The workspace ends with CUB's scratch, sized for the step that needs most (the steps run one after another).
// Measuring (ws_need given): the bytes the whole workspace needs; running: whether ws_bytes holds them.
static int finish_workspace(Arena &ar, size_t most, void **temp, size_t *temp_bytes, int64_t ws_bytes,
                            int64_t *ws_need)
{
    *temp = ar.take<char>(most);
    *temp_bytes = most;
    if (ws_need) *ws_need = (int64_t)ar.off;
    else if ((int64_t)ar.off > ws_bytes) return (int)cudaErrorInvalidValue;
    return 0;
}

// Core buffers for n positions (pool: `pool_entries` entries, twice: as found and grouped).
static void core_layout(Arena &ar, int64_t n, int64_t pool_entries, Core &c)
{
    c.prep = ar.take<obb_prep>(n);
    c.bounds = ar.take<float4>(n);
    c.diagT = ar.take<unsigned long long>(n);
    c.columns = n + n / TILE + 2;  // >= sum over segments of ceil(L / 64), + 1
    c.col_count = ar.take<int>(c.columns);
    c.col_start = ar.take<int>(c.columns);
    c.col_pos = ar.take<int64_t>(c.columns);
    c.col_seg = ar.take<int64_t>(c.columns);
    c.pool_count = ar.take<unsigned long long>(1);
    c.kflag = ar.take<int>(n + 1);
    c.kept_global = ar.take<unsigned long long>(c.columns);
    c.pool_entries = pool_entries;
    c.pool = ar.take<ulonglong2>(pool_entries);
    c.grouped = ar.take<ulonglong2>(pool_entries);
    c.class_iou = nullptr;
    c.seg_group = nullptr;
    c.label_mask = 0;
}

// The segment machinery, candidate words, exact test and scan over n positions whose group / order are set up; fills
// core.kflag (indexed by rank[position], or by position), and with `keep` (one segment) the kept indices. Measuring
// (`need` given): CUB's scratch for these steps.
template <typename Loader>
static int run_core(int64_t n, Loader load, const int64_t *order, const int64_t *order2, const int64_t *rank, Segs g,
                    double threshold, Core core, int64_t *status, void *temp, size_t temp_bytes, cudaStream_t s,
                    size_t *need, bool grouped, int64_t *keep = nullptr)
{
    size_t bytes = 0, most = 0;
    if (need) {
        if (grouped && !g.preset) {  // (g.group itself is NULL while measuring)
            CUB_TRY(cub::DeviceScan::InclusiveSum(nullptr, bytes, g.flags, g.segid, n, s));
            most = bytes > most ? bytes : most;
            CUB_TRY(cub::DeviceScan::InclusiveScan(nullptr, bytes, g.info, g.incl, SegSum(), n, s));
            most = bytes > most ? bytes : most;
        }
        CUB_TRY((cudaError_t)exclusive_sum(core.col_count, core.col_start, core.columns, nullptr, 0, s, &bytes));
        most = bytes > most ? bytes : most;
        *need = most;
        return 0;
    }
    if (g.group && !g.preset) {
        k_seg_flags<<<grid_of(n, 256), 256, 0, s>>>(n, g.group, g.flags);
        bytes = temp_bytes;
        CUB_TRY(cub::DeviceScan::InclusiveSum(temp, bytes, g.flags, g.segid, n, s));
        k_seg_starts<<<grid_of(n, 256), 256, 0, s>>>(n, g);
    }
    k_prepare<<<grid_of(core.columns, 256), 256, 0, s>>>(n, load, order, order2, g, core, status);
    if (g.group && !g.preset) {
        bytes = temp_bytes;
        CUB_TRY(cub::DeviceScan::InclusiveScan(temp, bytes, g.info, g.incl, SegSum(), n, s));
    }
    static std::atomic<int> pairs_per_sm[CACHED_DEVICES], exact_per_sm[CACHED_DEVICES], scan_per_sm[CACHED_DEVICES];
    const int sms = sm_count();
    k_pairs<<<resident_grid(k_pairs, PAIR_THREADS, sms, pairs_per_sm), PAIR_THREADS, 0, s>>>(n, g, core);
    k_exact<<<resident_grid(k_exact, 256, sms, exact_per_sm), 256, 0, s>>>(threshold, core);
    CUB_TRY((cudaError_t)exclusive_sum(core.col_count, core.col_start, core.columns, temp, temp_bytes, s));
    k_group<<<sms * 4, 256, 0, s>>>(core, status);
    const int scan_grid = (int)min(n, (int64_t)resident_grid(k_scan, SCAN_THREADS, sms, scan_per_sm));
    k_scan<<<scan_grid, SCAN_THREADS, 0, s>>>(n, g, core, rank, order, keep, status);
    return (int)cudaGetLastError();
}

}  // namespace obbnms
