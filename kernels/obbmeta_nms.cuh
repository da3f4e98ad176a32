// obbmeta: greedy rotated NMS and fused YOLO-OBB decode on the device, with no host synchronisation.
//
// Included by obbmeta_cuda.cu (one translation unit). Every entry point only enqueues work on the caller's stream:
// buffers have sizes the host knows before the call (the *_sizes functions give them), results stay on the device
// (kept indices padded with -1 and a count; the decode's (B, max_det, ...) tables and counts), and errors found in
// the data (non-finite values, a suppression mask larger than its buffer) are flags in a device status word. So a
// whole post-processing step can be captured in a CUDA graph.
//
// The data path (greedy NMS, the keep set of obbmeta_nms on the host, kernels/geometry_cpu.c):
//   1. sort by descending score (stable: equal scores keep the lower index first), then, with labels, stably by
//      label: every (label) group is a contiguous "segment" in score order;
//   2. prepare each box once (obb_prep: trigonometry, bounds, area);
//   3. suppression mask per segment, in tiles of 64 columns over the upper triangle: one warp builds a row's 64-bit
//      word with two ballots, every pair asks obb_prep_suppresses (the host's own predicate: bounding boxes, an area
//      bound, then the exact clipping in double). Only the words that matter are stored: each row's word of its own
//      64-box chunk (the "diagonal"), and the non-zero words right of it, appended to a pool and then grouped by the
//      chunk of columns they cover;
//   4. greedy scan, one warp per segment, 64 boxes at a time: the chunk's removed bits are the OR of its column
//      group's words whose rows were kept (a bit set in shared memory), loaded one chunk ahead; then the chunk is
//      resolved from its diagonal words in registers (one step per kept box);
//   5. kept flags -> kept indices in score order (stream compaction).
// Memory is linear in the boxes plus 32 bytes per non-zero word (overlapping pairs, 64 columns to a word): no N x N
// matrix of any kind. The pool's size is given by the caller; data that needs more sets a status flag and says how
// much (the sized entry points then run once more with that).
#include <cub/cub.cuh>

namespace obbnms {

constexpr int TILE = 64;            // boxes per chunk = columns per tile = bits per mask word
constexpr int TILE_ROWS = 32;       // most rows per mask tile (16 below SMALL_N boxes: more tiles, fewer rows per warp)
constexpr int64_t SMALL_N = 8192;
constexpr int MASK_THREADS = 256;   // 8 warps per tile, 4 rows each
constexpr int SCAN_WARPS = 4;       // segments per scan block (one per warp)
constexpr int SCAN_SHARED_WORDS = 512;  // kept bits of a segment up to 32768 boxes stay in shared memory
constexpr unsigned FULL = 0xffffffffu;
constexpr uint64_t NO_KEY = ~0ull;  // decode: a sort key that is not a candidate (sorts last)
constexpr int64_t NO_GROUP = 0xffffffffLL;  // its group (NO_KEY >> 32)

// status[0]: kept boxes (NMS); status[1]: flags; status[2]: non-zero mask words the data needed (pool entries).
enum : unsigned long long { ST_BOXES = 1, ST_SCORES = 2, ST_OVERFLOW = 4 };

struct SegInfo {
    int64_t tiles, width;  // mask tiles over the upper triangle, W = ceil(L / 64) chunks
};
struct SegSum {
    __host__ __device__ SegInfo operator()(const SegInfo &a, const SegInfo &b) const
    {
        return {a.tiles + b.tiles, a.width + b.width};
    }
};

// Where the segments are: positions 0..n-1 in their final order.
struct Segs {
    const int64_t *group;  // group of each position (non-decreasing), or NULL: one segment [0, n)
    int decode;            // groups equal to NO_GROUP are not candidates (their segment is empty)
    int *flags;            // 1 where a segment starts
    int *segid;            // inclusive sum of flags: segment of a position, + 1
    int64_t *start;        // first position of each segment
    int64_t *nseg;         // number of segments (device scalar)
    SegInfo *info;         // per segment
    SegInfo *incl;         // its inclusive prefix sum
    int tile_rows;         // rows per mask tile: 16 or 32 (TILE a multiple of it)
};

// Mask tiles of a segment of len boxes: row tile r (tile_rows rows, in chunk r / q, q = TILE / tile_rows) meets column
// chunks r / q .. w - 1.
__host__ __device__ __forceinline__ int64_t segment_tiles(int64_t len, int tile_rows)
{
    const int64_t w = (len + TILE - 1) / TILE, rt = (len + tile_rows - 1) / tile_rows, q = TILE / tile_rows;
    const int64_t full = rt / q, rem = rt % q;
    return q * (full * w - full * (full - 1) / 2) + rem * (w - full);
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
template <typename T>
struct RowBoxes {
    const T *boxes;  // (n, 5)
    __device__ obb_box operator()(int64_t i) const { return load_box(boxes + 5 * i); }
};

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

// Position q: the box at order[q] (order2 given: order[order2[q]]) prepared; and segment q's size, when q is one.
template <typename Loader>
__global__ void k_prepare(int64_t n, Loader load, const int64_t *order, const int64_t *order2, obb_prep *prep,
                          Segs g, int *col_count, int64_t columns, unsigned long long *pool_count, int64_t *status)
{
    GRID_LOOP(k, columns) col_count[k] = 0;
    if (blockIdx.x == 0 && threadIdx.x == 0) *pool_count = 0;
    GRID_LOOP(q, n) {
        const int64_t o = order2 ? order[order2[q]] : order[q];
        const obb_box box = load(o);
        prep[q] = obb_prep_make(&box);
        if (g.decode && g.group[q] != NO_GROUP &&
            !(isfinite(box.cx) && isfinite(box.cy) && isfinite(box.w) && isfinite(box.h) && isfinite(box.a)))
            raise_flag(status, ST_BOXES);
        const int64_t nseg = g.group ? *g.nseg : 1;
        SegInfo info = {0, 0};
        if (q < nseg) {
            const int64_t st = g.group ? g.start[q] : 0;
            int64_t len = seg_end(g, q, nseg, n) - st;
            if (g.decode && g.group[st] == NO_GROUP) len = 0;
            info = {segment_tiles(len, g.tile_rows), (len + TILE - 1) / TILE};
        }
        if (!g.group) {
            if (q == 0) {
                g.start[0] = 0;
                *g.nseg = 1;
                g.incl[0] = info;  // one segment: its prefix is itself
            }
        } else {
            g.info[q] = info;
        }
    }
}

// ---- 3. suppression mask -----------------------------------------------------------------------------------------
// The buffers of steps 3 and 4.
struct Core {
    obb_prep *prep;
    unsigned long long *diag;  // per position: its word against its own chunk
    ulonglong2 *pool;          // non-zero words right of the diagonal: x = chunk column << 32 | row in segment, y = word
    ulonglong2 *grouped;       // the same, grouped by chunk column
    int64_t pool_entries;      // room in pool (and in grouped)
    unsigned long long *pool_count;
    int *col_count;            // per chunk column (segments' columns one after another), then a 0
    int *col_start;            // exclusive prefix sum of col_count
    int64_t columns;           // entries of col_count (>= the segments' chunks, + 1)
    int *kflag;
    unsigned long long *kept_global;  // kept bits of segments too large for shared memory
};

// Tile t of a segment of w chunks: row tile r and column chunk c >= r / q. The q row tiles of chunk k have w - k tiles
// each: prefix P(k) = q (k w - k (k - 1) / 2).
__device__ __forceinline__ void tile_of(int64_t t, int64_t w, int64_t q, int64_t *r, int64_t *c)
{
    const double wh = (double)w + 0.5;
    int64_t k = (int64_t)(wh - sqrt(fmax(wh * wh - 2.0 * (double)t / (double)q, 0.0)));
    if (k < 0) k = 0;
    while (k > 0 && q * (k * w - k * (k - 1) / 2) > t) --k;
    while (q * ((k + 1) * w - (k + 1) * k / 2) <= t) ++k;
    const int64_t in_group = t - q * (k * w - k * (k - 1) / 2), per_row = w - k;
    *r = q * k + in_group / per_row;
    *c = k + in_group % per_row;
}

__global__ void __launch_bounds__(MASK_THREADS) k_mask(int64_t n, double threshold, Segs g, Core core, int64_t *status)
{
    __shared__ obb_prep rows[TILE_ROWS], cols[TILE];
    __shared__ int64_t sh_start, sh_len, sh_r, sh_c, sh_col, sh_base;
    __shared__ int nz, queued;
    __shared__ int nz_row[TILE_ROWS];
    __shared__ unsigned long long nz_word[TILE_ROWS];
    __shared__ unsigned long long words[TILE_ROWS];
    __shared__ unsigned short queue[TILE_ROWS * TILE];  // pairs (row << 6 | column) that need the exact IoU
    const int64_t nseg = *g.nseg;
    const int64_t total = g.incl[nseg - 1].tiles;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
        if (threadIdx.x == 0) {
            int64_t lo = 0, hi = nseg - 1;  // the segment holding tile t: first s with incl[s].tiles > t
            while (lo < hi) {
                const int64_t mid = (lo + hi) / 2;
                if (g.incl[mid].tiles > t) hi = mid; else lo = mid + 1;
            }
            const int64_t st = g.start[lo], len = seg_end(g, lo, nseg, n) - st;
            const int64_t w = (len + TILE - 1) / TILE;
            int64_t r, c;
            tile_of(t - (g.incl[lo].tiles - segment_tiles(len, g.tile_rows)), w, TILE / g.tile_rows, &r, &c);
            sh_start = st;
            sh_len = len;
            sh_r = r;
            sh_c = c;
            sh_col = g.incl[lo].width - w + c;  // this chunk column among all segments' columns
            nz = 0;
            queued = 0;
        }
        __syncthreads();
        const int64_t st = sh_start, r = sh_r, c = sh_c;
        const int64_t row0 = r * g.tile_rows;
        const int rows_here = (int)min((int64_t)g.tile_rows, sh_len - row0), cols_here = (int)min((int64_t)TILE, sh_len - c * TILE);
        if (threadIdx.x < rows_here) rows[threadIdx.x] = core.prep[st + row0 + threadIdx.x];
        else if (threadIdx.x >= TILE && threadIdx.x < TILE + cols_here) cols[threadIdx.x - TILE] = core.prep[st + c * TILE + threadIdx.x - TILE];
        __syncthreads();
        // Each lane tests the same two columns against every row of its warp: their bounds stay in registers, and
        // only pairs whose bounding boxes meet read the full prepared boxes.
        const int j0 = lane, j1 = lane + 32;
        const bool c0 = j0 < cols_here && cols[j0].valid, c1 = j1 < cols_here && cols[j1].valid;
        const double a0x1 = c0 ? cols[j0].x1 : 0, a0y1 = c0 ? cols[j0].y1 : 0, a0x2 = c0 ? cols[j0].x2 : 0,
                     a0y2 = c0 ? cols[j0].y2 : 0;
        const double a1x1 = c1 ? cols[j1].x1 : 0, a1y1 = c1 ? cols[j1].y1 : 0, a1x2 = c1 ? cols[j1].x2 : 0,
                     a1y2 = c1 ? cols[j1].y2 : 0;
        if (threadIdx.x < TILE_ROWS) words[threadIdx.x] = 0;
        // Pass 1: the cheap tests (bounds, area bound, separating axes) for every pair; the few pairs they cannot
        // decide are queued, so that pass 2 runs the exact clipping on all threads at once instead of one lane of a
        // warp at a time.
        for (int i = warp; i < rows_here; i += MASK_THREADS / 32) {
            const obb_prep *ri = &rows[i];
            const int64_t row = row0 + i;             // in the segment
            const int64_t first = row - c * TILE + 1;  // columns of this chunk after the row (only those count)
            const double x1 = ri->x1, y1 = ri->y1, x2 = ri->x2, y2 = ri->y2;
            const bool rv = ri->valid;
            if (rv && c0 && j0 >= first && !(a0x1 > x2 || a0x2 < x1 || a0y1 > y2 || a0y2 < y1) &&
                obb_prep_may_suppress(ri, &cols[j0], threshold))
                queue[atomicAdd(&queued, 1)] = (unsigned short)(i << 6 | j0);
            if (rv && c1 && j1 >= first && !(a1x1 > x2 || a1x2 < x1 || a1y1 > y2 || a1y2 < y1) &&
                obb_prep_may_suppress(ri, &cols[j1], threshold))
                queue[atomicAdd(&queued, 1)] = (unsigned short)(i << 6 | j1);
        }
        __syncthreads();
        // Pass 2: the exact IoU of the queued pairs, one per thread.
        for (int q = threadIdx.x; q < queued; q += MASK_THREADS) {
            const int i = queue[q] >> 6, j = queue[q] & 63;
            if (obb_prep_iou(&rows[i], &cols[j]) > threshold) atomicOr(&words[i], 1ull << j);
        }
        __syncthreads();
        // Pass 3: each row's word: the diagonal one to its place, non-zero later ones to the pool.
        if (threadIdx.x < rows_here) {
            const int i = threadIdx.x;
            const int64_t row = row0 + i;
            const unsigned long long word = words[i];
            if (row / TILE == c) {
                core.diag[st + row] = word;
            } else if (word) {
                const int k = atomicAdd(&nz, 1);
                nz_row[k] = i;
                nz_word[k] = word;
            }
        }
        __syncthreads();
        if (threadIdx.x == 0 && nz) {
            sh_base = (int64_t)atomicAdd(core.pool_count, (unsigned long long)nz);
            atomicAdd(&core.col_count[sh_col], nz);
        }
        __syncthreads();
        if (threadIdx.x < nz && sh_base + threadIdx.x < core.pool_entries)
            core.pool[sh_base + threadIdx.x] = make_ulonglong2(((unsigned long long)sh_col << 32) |
                                                                   (unsigned long long)(row0 + nz_row[threadIdx.x]),
                                                               nz_word[threadIdx.x]);
        __syncthreads();
    }
}

// Pool entries -> grouped by chunk column (col_start: where each column's entries begin). col_count counts down.
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
        const int64_t col = (int64_t)(e.x >> 32);
        core.grouped[core.col_start[col] + atomicSub(&core.col_count[col], 1) - 1] = e;
    }
}

// ---- 4. greedy scan ------------------------------------------------------------------------------------------------
__global__ void __launch_bounds__(SCAN_WARPS * 32) k_scan(int64_t n, Segs g, Core core, const int64_t *rank,
                                                          const int64_t *status)
{
    __shared__ unsigned long long kept_shared[SCAN_WARPS][SCAN_SHARED_WORDS];
    if (status[1] & ST_OVERFLOW) return;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t nseg = *g.nseg;
    for (int64_t s = blockIdx.x * (int64_t)SCAN_WARPS + warp; s < nseg; s += (int64_t)gridDim.x * SCAN_WARPS) {
        const int64_t w = g.incl[s].width - (s ? g.incl[s - 1].width : 0);
        if (w == 0) continue;  // not candidates (decode)
        const int64_t st = g.start[s], len = seg_end(g, s, nseg, n) - st, col0 = g.incl[s].width - w;
        unsigned long long *kept_bits = w <= SCAN_SHARED_WORDS ? kept_shared[warp] : core.kept_global + col0;
        // The next chunk's inputs do not depend on the scan: its diagonal words, its column's entry range and each
        // lane's first entry are loaded one chunk ahead.
        int64_t e0 = core.col_start[col0], e1 = core.col_start[col0 + 1];
        ulonglong2 first = e0 + lane < e1 ? core.grouped[e0 + lane] : make_ulonglong2(0, 0);
        unsigned long long d_lo = lane < len ? core.diag[st + lane] : 0;
        unsigned long long d_hi = lane + 32 < len ? core.diag[st + lane + 32] : 0;
        for (int64_t b = 0; b < w; ++b) {
            const int64_t row0 = b * TILE;
            const unsigned long long cur_lo = d_lo, cur_hi = d_hi;
            const int64_t c0 = e0, c1 = e1;
            const ulonglong2 cur_first = first;
            if (b + 1 < w) {
                const int64_t next = row0 + TILE;
                d_lo = next + lane < len ? core.diag[st + next + lane] : 0;
                d_hi = next + lane + 32 < len ? core.diag[st + next + lane + 32] : 0;
                e0 = c1;
                e1 = core.col_start[col0 + b + 2];
                first = e0 + lane < e1 ? core.grouped[e0 + lane] : make_ulonglong2(0, 0);
            }
            // Removed bits: the OR of this column's words whose rows (all in earlier chunks) were kept.
            unsigned long long removed = 0;
            if (c0 + lane < c1) {
                const uint32_t row = (uint32_t)cur_first.x;
                if (kept_bits[row / TILE] >> (row % TILE) & 1ull) removed |= cur_first.y;
            }
#pragma unroll 4
            for (int64_t e = c0 + 32 + lane; e < c1; e += 32) {
                const ulonglong2 en = core.grouped[e];
                const uint32_t row = (uint32_t)en.x;
                if (kept_bits[row / TILE] >> (row % TILE) & 1ull) removed |= en.y;
            }
#pragma unroll
            for (int off = 16; off > 0; off /= 2) removed |= __shfl_xor_sync(FULL, removed, off);
            const int rows_here = (int)min((int64_t)TILE, len - row0);
            const unsigned long long valid = rows_here == TILE ? ~0ull : ((1ull << rows_here) - 1);
            // Resolve the chunk: every lane walks the same bits (warp-uniform), one step per kept box.
            unsigned long long cand = valid & ~removed, kept = 0;
            while (cand) {
                const int bit = __ffsll((long long)cand) - 1;
                kept |= 1ull << bit;
                const unsigned long long dl = __shfl_sync(FULL, cur_lo, bit & 31), dh = __shfl_sync(FULL, cur_hi, bit & 31);
                cand &= cand - 1;
                cand &= ~(bit < 32 ? dl : dh);
            }
            if (lane == 0) kept_bits[b] = kept;
            if (kept >> lane & 1ull) core.kflag[rank ? rank[st + row0 + lane] : st + row0 + lane] = 1;
            if (kept >> (lane + 32) & 1ull) core.kflag[rank ? rank[st + row0 + lane + 32] : st + row0 + lane + 32] = 1;
            __syncwarp();
        }
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

static int sm_count()
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 80;
    return sms > 0 ? sms : 80;
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

// Core buffers for n positions (pool: `pool_entries` entries, twice: as appended and grouped).
static void core_layout(Arena &ar, int64_t n, int64_t pool_entries, Core &c)
{
    c.prep = ar.take<obb_prep>(n);
    c.diag = ar.take<unsigned long long>(n);
    c.columns = n + n / TILE + 2;  // >= sum over segments of ceil(L / 64), + 1
    c.col_count = ar.take<int>(c.columns);
    c.col_start = ar.take<int>(c.columns);
    c.pool_count = ar.take<unsigned long long>(1);
    c.kflag = ar.take<int>(n + 1);
    c.kept_global = ar.take<unsigned long long>(c.columns);
    c.pool_entries = pool_entries;
    c.pool = ar.take<ulonglong2>(pool_entries);
    c.grouped = ar.take<ulonglong2>(pool_entries);
}

// The segment machinery, mask and scan over n positions whose group / order are set up; fills core.kflag (indexed by
// rank[position], or by position). Measuring (`need` given): CUB's scratch for these steps.
template <typename Loader>
static int run_core(int64_t n, Loader load, const int64_t *order, const int64_t *order2, const int64_t *rank, Segs g,
                    double threshold, Core core, int64_t *status, void *temp, size_t temp_bytes, cudaStream_t s,
                    size_t *need, bool grouped)
{
    size_t bytes = 0, most = 0;
    if (need) {
        if (grouped) {  // (g.group itself is NULL while measuring)
            CUB_TRY(cub::DeviceScan::InclusiveSum(nullptr, bytes, g.flags, g.segid, n, s));
            most = bytes > most ? bytes : most;
            CUB_TRY(cub::DeviceScan::InclusiveScan(nullptr, bytes, g.info, g.incl, SegSum(), n, s));
            most = bytes > most ? bytes : most;
        }
        CUB_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, core.col_count, core.col_start, core.columns, s));
        most = bytes > most ? bytes : most;
        *need = most;
        return 0;
    }
    if (g.group) {
        k_seg_flags<<<grid_of(n, 256), 256, 0, s>>>(n, g.group, g.flags);
        bytes = temp_bytes;
        CUB_TRY(cub::DeviceScan::InclusiveSum(temp, bytes, g.flags, g.segid, n, s));
        k_seg_starts<<<grid_of(n, 256), 256, 0, s>>>(n, g);
    }
    g.tile_rows = n <= SMALL_N ? 16 : TILE_ROWS;
    k_prepare<<<grid_of(core.columns, 256), 256, 0, s>>>(n, load, order, order2, core.prep, g, core.col_count,
                                                         core.columns, core.pool_count, status);
    if (g.group) {
        bytes = temp_bytes;
        CUB_TRY(cub::DeviceScan::InclusiveScan(temp, bytes, g.info, g.incl, SegSum(), n, s));
    }
    const int sms = sm_count();
    k_mask<<<sms * 8, MASK_THREADS, 0, s>>>(n, threshold, g, core, status);
    bytes = temp_bytes;
    CUB_TRY(cub::DeviceScan::ExclusiveSum(temp, bytes, core.col_count, core.col_start, core.columns, s));
    k_group<<<sms * 4, 256, 0, s>>>(core, status);
    const int64_t scan_blocks = (n + SCAN_WARPS - 1) / SCAN_WARPS;
    k_scan<<<(int)min(scan_blocks, (int64_t)sms * 16), SCAN_WARPS * 32, 0, s>>>(n, g, core, rank, status);
    return (int)cudaGetLastError();
}

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

template <typename T>
static int nms_impl(int64_t n, const T *boxes, const T *scores, const int64_t *labels, bool has_labels,
                    double threshold, void *ws, int64_t ws_bytes, int64_t pool_entries, int64_t *keep, int64_t *status,
                    cudaStream_t s, int64_t *ws_need)
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

    CUB_TRY(cudaMemsetAsync(status, 0, 3 * sizeof(int64_t), s));
    if (n == 0) return (int)cudaGetLastError();
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
    const int code = run_core(n, RowBoxes<T>{boxes}, b.idx_b, rank, rank, b.g, threshold, b.core, status, b.temp,
                              b.temp_bytes, s, nullptr, has_labels);
    if (code) return code;
    bytes = b.temp_bytes;
    CUB_TRY(cub::DeviceSelect::Flagged(b.temp, bytes, b.idx_b, b.core.kflag, keep, status, n, s));
    return (int)cudaGetLastError();
}

// ---- fused YOLO-OBB decode -----------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t descending_bits(float v)
{
    const uint32_t u = __float_as_uint(v + 0.0f);
    return ~((u & 0x80000000u) ? ~u : (u | 0x80000000u));  // ascending order of the bits = descending v
}

// One pass over the head: per item (anchor, or anchor x class with multi-label) its score, class and a sort key:
// (image, class, descending score) for a candidate (score > conf, class allowed), NO_KEY otherwise. With `ranked`,
// the key is (image, descending score) first and the per-image top-k is taken after sorting it.
__global__ void k_candidates(const float *head, int64_t B, int64_t C, int64_t N, int nc, int multi, int agnostic,
                             float conf, const int *allowed, int label_bits, int ranked, uint64_t *key, int64_t *val,
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
            ok = best > conf;
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
            ok = !nan && best > conf;  // a NaN score makes the anchor no candidate, as torch's amax does
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
                              int64_t *out_labels, int64_t *counts, unsigned long long *count, int *kflag)
{
    GRID_LOOP(i, B * max_det * 5) out_boxes[i] = 0.0f;
    GRID_LOOP(i, B * max_det) {
        out_scores[i] = 0.0f;
        out_labels[i] = 0;
    }
    GRID_LOOP(i, B) {
        counts[i] = 0;
        count[i] = 0;
    }
    GRID_LOOP(i, n + 1) kflag[i] = 0;
}

__global__ void k_groups(int64_t n, const uint64_t *key, int64_t *group)
{
    GRID_LOOP(q, n) group[q] = (int64_t)(key[q] >> 32);
}

__device__ __forceinline__ int64_t lower_group(const int64_t *group, int64_t n, int64_t value)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (group[mid] < value) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Kept candidate q -> its place among its image's kept candidates by (descending score, item): the kept candidates
// of each class segment that come before it (binary search; kprefix = exclusive prefix sum of the kept flags).
__global__ void k_outputs(int64_t n, Segs g, const uint64_t *key, const int64_t *val, const int *kflag,
                          const int *kprefix, const float *score, const int *label, HeadBoxes load, int label_bits,
                          int64_t max_det, double scale, double pad_x, double pad_y, float *out_boxes,
                          float *out_scores, int64_t *out_labels)
{
    GRID_LOOP(q, n) {
        if (!kflag[q]) continue;
        const int64_t b = g.group[q] >> label_bits;
        const int64_t lo = lower_group(g.group, n, b << label_bits), hi = lower_group(g.group, n, (b + 1) << label_bits);
        const int64_t nseg = *g.nseg, own = g.segid[q] - 1;
        const uint64_t my_key = key[q] & 0xffffffffull;
        const int64_t my_item = val[q];
        int64_t rank = 0;
        for (int64_t s = g.segid[lo] - 1; s <= g.segid[hi - 1] - 1; ++s) {
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
            rank += kprefix[before] - kprefix[st];
        }
        if (rank >= max_det) continue;
        const obb_box box = load(my_item);
        const int64_t o = b * max_det + rank;
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

__global__ void k_counts(int64_t n, int64_t B, Segs g, const int *kprefix, int label_bits, int64_t max_det,
                         int64_t *counts)
{
    GRID_LOOP(b, B) {
        const int64_t lo = lower_group(g.group, n, b << label_bits), hi = lower_group(g.group, n, (b + 1) << label_bits);
        const int64_t kept = kprefix[hi] - kprefix[lo];
        counts[b] = kept < max_det ? kept : max_det;
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
                       double iou, const int *allowed, int64_t k, int64_t max_det, double scale, double pad_x,
                       double pad_y, void *ws, int64_t ws_bytes, int64_t pool_entries,
                       float *out_boxes, float *out_scores, int64_t *out_labels, int64_t *counts, int64_t *status,
                       cudaStream_t s, int64_t *ws_need)
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
    b.kprefix = ar.take<int>(n + 1);
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

    CUB_TRY(cudaMemsetAsync(status, 0, 3 * sizeof(int64_t), s));
    {
        const int64_t most_items = B * max_det * 5 > n + 1 ? B * max_det * 5 : n + 1;
        k_zero_decode<<<grid_of(most_items, 256), 256, 0, s>>>(B, max_det, n, out_boxes, out_scores, out_labels, counts,
                                                              b.count, b.core.kflag);
    }
    if (m == 0 || n == 0) return (int)cudaGetLastError();
    k_candidates<<<grid_of(m, 256), 256, 0, s>>>(head, B, C, N, nc, multi, agnostic, (float)conf, allowed, label_bits,
                                                 ranked, b.key1, b.val1, b.score, b.label, b.count, status);
    if (ranked) {
        bytes = b.temp_bytes;
        CUB_TRY(cub::DeviceRadixSort::SortPairs(b.temp, bytes, b.key1, b.key1s, b.val1, b.val1s, m, 0, 32 + image_bits, s));
        k_top_k<<<grid_of(m, 256), 256, 0, s>>>(m, b.key1s, b.val1s, b.label, b.count, k, agnostic, label_bits,
                                                b.key2, b.val2);
    }
    bytes = b.temp_bytes;
    CUB_TRY(cub::DeviceRadixSort::SortPairs(b.temp, bytes, b.key2, b.key2s, b.val2, b.val2s, m, 0, key_bits, s));
    // Positions >= n hold no candidate (at most k per image), so the core only looks at the first n.
    k_groups<<<grid_of(n, 256), 256, 0, s>>>(n, b.key2s, b.group);
    int code = run_core(n, load, b.val2s, nullptr, nullptr, b.g, iou, b.core, status, b.temp, b.temp_bytes, s,
                        nullptr, true);
    if (code) return code;
    bytes = b.temp_bytes;
    CUB_TRY(cub::DeviceScan::ExclusiveSum(b.temp, bytes, b.core.kflag, b.kprefix, n + 1, s));
    if (max_det > 0)
        k_outputs<<<grid_of(n, 256), 256, 0, s>>>(n, b.g, b.key2s, b.val2s, b.core.kflag, b.kprefix, b.score, b.label, load,
                                                  label_bits, max_det, scale, pad_x, pad_y, out_boxes, out_scores,
                                                  out_labels);
    k_counts<<<grid_of(B, 64), 64, 0, s>>>(n, B, b.g, b.kprefix, label_bits, max_det, counts);
    return (int)cudaGetLastError();
}

}  // namespace obbnms

// ---- C ABI -----------------------------------------------------------------------------------------------------------
// Non-zero mask words that can occur in the worst case for groups of at most `len` boxes, n in all: 64 rows per chunk
// times the chunks right of theirs.
// Pools hold fewer than 2^31 entries (the column offsets are int): data that needs more is flagged as too large.
static int64_t pool_cap(int64_t entries) { return entries < 0x7fffffffLL ? entries : 0x7fffffffLL; }

static int64_t pool_bound(int64_t n, int64_t len)
{
    const int64_t t = obbnms::TILE, w = (len + t - 1) / t;
    return w > 1 ? (n / t + 1) * t * (w - 1) / 2 + t * w : 0;
}

// Workspace bytes of obbmeta_cuda_nms for a pool of `pool_entries` non-zero mask words, and the pool that suffices
// for any data.
OBB_EXPORT int obbmeta_cuda_nms_sizes(int64_t n, int has_labels, int is_double, int64_t pool_entries,
                                      int64_t *workspace_bytes, int64_t *pool_needed_at_most)
{
    if (n < 0 || n > 0x7fffffffLL || pool_entries < 0) return (int)cudaErrorInvalidValue;
    *pool_needed_at_most = pool_cap(pool_bound(n, n));
    pool_entries = pool_cap(pool_entries);
    if (is_double)
        return obbnms::nms_impl<double>(n, nullptr, nullptr, nullptr, has_labels != 0, 0.0, nullptr, 0, pool_entries,
                                        nullptr, nullptr, 0, workspace_bytes);
    return obbnms::nms_impl<float>(n, nullptr, nullptr, nullptr, has_labels != 0, 0.0, nullptr, 0, pool_entries,
                                   nullptr, nullptr, 0, workspace_bytes);
}

// Greedy rotated NMS, all on `stream`, no host sync. keep: n int64, the kept indices by descending score, then -1.
// status: 3 int64 (kept count; flags: 1 non-finite / out-of-range boxes, 2 non-finite scores, 4 pool too small;
// the non-zero mask words the data needed). The workspace (obbmeta_cuda_nms_sizes) holds a pool of pool_entries.
OBB_EXPORT int obbmeta_cuda_nms(int64_t n, const void *boxes, const void *scores, int is_double,
                                const int64_t *labels, double threshold, void *workspace, int64_t workspace_bytes,
                                int64_t pool_entries, int64_t *keep, int64_t *status, void *stream)
{
    if (n < 0 || n > 0x7fffffffLL || pool_entries < 0) return (int)cudaErrorInvalidValue;
    pool_entries = pool_cap(pool_entries);
    cudaStream_t s = (cudaStream_t)stream;
    if (is_double)
        return obbnms::nms_impl<double>(n, (const double *)boxes, (const double *)scores, labels, labels != nullptr,
                                        threshold, workspace, workspace_bytes, pool_entries, keep, status, s, nullptr);
    return obbnms::nms_impl<float>(n, (const float *)boxes, (const float *)scores, labels, labels != nullptr,
                                   threshold, workspace, workspace_bytes, pool_entries, keep, status, s, nullptr);
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
    return obbnms::decode_impl(nullptr, B, C, N, multi, agnostic, 0, 0, nullptr, k, 0, 1, 0, 0, nullptr, 0,
                               pool_cap(pool_entries), nullptr, nullptr, nullptr, nullptr, nullptr, 0, workspace_bytes);
}

// YOLO-OBB raw head (B, C = 4 + nc + 1, N) float32 -> per image at most max_det boxes: candidates (score > conf,
// best class or every class with multi, class allowed) -> the k best per image -> greedy rotated NMS per (image,
// class) (per image when agnostic) -> by descending score -> the letterbox inverse. out_boxes (B, max_det, 5),
// out_scores (B, max_det), out_labels (B, max_det): rows past counts[b] are 0. status as for obbmeta_cuda_nms.
OBB_EXPORT int obbmeta_cuda_yolo_obb(const float *head, int64_t B, int64_t C, int64_t N, int multi, int agnostic,
                                     double conf, double iou, const int *allowed, int64_t k, int64_t max_det,
                                     double scale, double pad_x, double pad_y, void *workspace, int64_t workspace_bytes,
                                     int64_t pool_entries, float *out_boxes, float *out_scores, int64_t *out_labels,
                                     int64_t *counts, int64_t *status, void *stream)
{
    const int64_t nc = C - 5, per_image = multi ? N * nc : N;
    if (B < 1 || nc < 1 || N < 0 || k < 1 || max_det < 0 || pool_entries < 0 || B * per_image > 0x7fffffffLL)
        return (int)cudaErrorInvalidValue;
    return obbnms::decode_impl(head, B, C, N, multi, agnostic, conf, iou, allowed, k, max_det, scale, pad_x, pad_y,
                               workspace, workspace_bytes, pool_cap(pool_entries), out_boxes, out_scores, out_labels, counts,
                               status, (cudaStream_t)stream, nullptr);
}
