/* obbmeta: host build of the oriented-box geometry (kernels/obb_geometry.h) behind a tiny C ABI for ctypes.
 * All pointers are raw tensor data: contiguous boxes (n, 5) and scores (n,), both float32 (is_double = 0) or both
 * float64 (is_double = 1), int64 labels. Results are in the same precision as the inputs. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "obb_abi.h"
#include "obb_geometry.h"
#include "obb_match.h"
#include "obb_status.h"

#define OBB_EXPORT __attribute__((visibility("default")))

OBB_EXPORT int obbmeta_geometry_abi_version(void) { return 4; }

/* What obbmeta/_native.py checks this library against at load (``NativeLibrary.constants``): the status flags of
 * the CUDA NMS and decode (obb_status.h), which obbmeta/geometry.py mirrors. Writes at most ``capacity`` entries;
 * returns how many there are. */
OBB_EXPORT int64_t obbmeta_geometry_abi_table(const char **names, int64_t *values, int64_t capacity)
{
    static const obb_abi_entry table[] = {
        OBB_ABI_CONST(OBB_STATUS_BOXES), OBB_ABI_CONST(OBB_STATUS_SCORES), OBB_ABI_CONST(OBB_STATUS_OVERFLOW),
        OBB_ABI_CONST(OBB_STATUS_CLASSES),
    };
    return OBB_ABI_COPY(table, names, values, capacity);
}

static obb_box obb_load(const void *boxes, int is_double, int64_t i)
{
    return is_double ? obb_box_from_double((const double *)boxes + 5 * i)
                     : obb_box_from_float((const float *)boxes + 5 * i);
}

static void obb_store(void *out, int is_double, int64_t i, double v)
{
    if (is_double)
        ((double *)out)[i] = v;
    else
        ((float *)out)[i] = (float)v;
}

OBB_EXPORT void obbmeta_iou_matrix(const void *a, int64_t n, const void *b, int64_t m, void *out, int is_double)
{
    for (int64_t i = 0; i < n; ++i) {
        const obb_box bi = obb_load(a, is_double, i);
        for (int64_t j = 0; j < m; ++j) {
            const obb_box bj = obb_load(b, is_double, j);
            obb_store(out, is_double, i * m + j, obb_box_iou(&bi, &bj));
        }
    }
}

OBB_EXPORT void obbmeta_iou_aligned(const void *a, const void *b, int64_t n, void *out, int is_double)
{
    for (int64_t i = 0; i < n; ++i) {
        const obb_box bi = obb_load(a, is_double, i), bj = obb_load(b, is_double, i);
        obb_store(out, is_double, i, obb_box_iou(&bi, &bj));
    }
}

/* ---------------------------------------------------------------- greedy NMS
 *
 * Greedy NMS keeps a box unless a box kept before it (higher score, or equal score and lower index; same label
 * when labels are given) has IoU > threshold with it. Only kept boxes whose bounding boxes meet the current one's
 * can have IoU > 0, so kept boxes are binned in a grid and each box is tested against the kept boxes of the cells
 * its bounding box covers: near-linear cost at constant box density instead of (kept x n).
 *
 * The grid has levels of doubling cell size; a kept box goes into the level whose cells are at least as large as
 * its bounding box, and is entered once, in the cell of its bounding box's lower corner (x1, y1). A query visits, per
 * non-empty level, the cells from its own lower corner minus the level's largest entered extent to its upper
 * corner (every box of that level that can meet it has its lower corner there), or, when those cells are more than
 * the level's entries, simply every entry of that level. Cells are addressed through one hash table (key: label,
 * level, cell x, cell y), chained; a bucket may hold other keys, which cost a comparison, never a wrong answer:
 * every candidate passes the same bounding-box test and exact IoU as before. Why it misses nothing: the cell index
 * floor((x - origin) / size), clamped, is a non-decreasing function of x, and the query's lower bound is widened by
 * more than the rounding of the extents it subtracts.
 */

#define OBB_GRID_LEVELS 48
#define OBB_GRID_MAX_CELL 1099511627776.0 /* 2^40: cell indices are clamped to [0, 2^40] (still monotone) */

typedef struct {
    double score;
    int64_t index;
} obb_ranked;

/* Descending score; ties keep the lower index first, so the order is total and deterministic. */
static int obb_rank_compare(const void *pa, const void *pb)
{
    const obb_ranked *a = (const obb_ranked *)pa, *b = (const obb_ranked *)pb;
    if (a->score > b->score) return -1;
    if (a->score < b->score) return 1;
    return (a->index > b->index) - (a->index < b->index);
}

typedef struct {
    uint64_t key;
    int64_t rank;    /* the kept box (its rank in score order) */
    int64_t next;    /* next entry in the bucket, -1 at the end */
} obb_grid_entry;

typedef struct {
    int64_t *rank; /* every kept box entered at this level (for queries that would visit more cells than this) */
    int64_t count, capacity;
    double max_extent; /* the largest bounding-box side entered here */
} obb_grid_level;

typedef struct {
    double origin_x, origin_y, base;
    int64_t *head; /* bucket -> first entry, -1 when empty */
    uint64_t mask; /* buckets - 1 (a power of two) */
    obb_grid_entry *entries;
    int64_t count, capacity;
    obb_grid_level levels[OBB_GRID_LEVELS];
    int used[OBB_GRID_LEVELS], n_used; /* non-empty levels, in the order they were first used */
} obb_grid;

static double obb_cell_size(const obb_grid *g, int level) { return ldexp(g->base, level); }

static int64_t obb_cell_index(double v, double origin, double size)
{
    const double c = floor((v - origin) / size);
    /* c >= 0 up to rounding (origin is the minimum); NaN cannot occur (valid boxes are finite). */
    if (!(c > 0.0)) return 0;
    return c > OBB_GRID_MAX_CELL ? (int64_t)OBB_GRID_MAX_CELL : (int64_t)c;
}

static uint64_t obb_cell_key(int64_t label, int level, int64_t ix, int64_t iy)
{
    /* splitmix64-style mixing of the four parts: equal keys for equal cells, well spread buckets otherwise. */
    uint64_t h = (uint64_t)label * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)level + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)ix * 0xBF58476D1CE4E5B9ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)iy * 0x94D049BB133111EBull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return h;
}

static int obb_grow(void **data, int64_t *capacity, int64_t need, size_t item)
{
    if (need <= *capacity) return 1;
    int64_t cap = *capacity ? *capacity : 16;
    while (cap < need) cap *= 2;
    void *p = realloc(*data, (size_t)cap * item);
    if (!p) return 0;
    *data = p;
    *capacity = cap;
    return 1;
}

/* Which level a bounding box of this extent goes to: the first whose cells are at least as large. */
static int obb_grid_level_for(const obb_grid *g, double extent)
{
    int level = 0;
    while (level < OBB_GRID_LEVELS - 1 && obb_cell_size(g, level) < extent) ++level;
    return level;
}

/* Enter kept box `rank` (label, bounding box) in the grid; 0 when out of memory. */
static int obb_grid_insert(obb_grid *g, int64_t rank, int64_t label, const double *box)
{
    const double ext = fmax(box[2] - box[0], box[3] - box[1]);
    const int level = obb_grid_level_for(g, ext);
    const double size = obb_cell_size(g, level);
    obb_grid_level *lv = &g->levels[level];
    if (!obb_grow((void **)&lv->rank, &lv->capacity, lv->count + 1, sizeof(int64_t))) return 0;
    if (!obb_grow((void **)&g->entries, &g->capacity, g->count + 1, sizeof(obb_grid_entry))) return 0;
    if (lv->count == 0) g->used[g->n_used++] = level;
    lv->rank[lv->count++] = rank;
    if (ext > lv->max_extent) lv->max_extent = ext;
    const uint64_t key = obb_cell_key(label, level, obb_cell_index(box[0], g->origin_x, size),
                                      obb_cell_index(box[1], g->origin_y, size));
    obb_grid_entry *e = &g->entries[g->count];
    e->key = key;
    e->rank = rank;
    e->next = g->head[key & g->mask];
    g->head[key & g->mask] = g->count++;
    return 1;
}

typedef struct {
    const obb_prep *box;     /* boxes in rank order, prepared */
    const int64_t *label;    /* their labels in rank order, or NULL */
    double threshold;
} obb_nms_data;

/* Does kept box k suppress box r? The shared predicate of kernels/obb_geometry.h (the CUDA mask kernel asks the same
 * one), within a label. */
static int obb_suppresses(const obb_nms_data *d, int64_t k, int64_t r)
{
    if (d->label && d->label[k] != d->label[r]) return 0;
    return obb_prep_suppresses(&d->box[k], &d->box[r], d->threshold);
}

static int obb_grid_query(const obb_grid *g, const obb_nms_data *d, int64_t r)
{
    const obb_prep *q = &d->box[r];
    const double box[4] = {q->x1, q->y1, q->x2, q->y2};
    const int64_t label = d->label ? d->label[r] : 0;
    for (int u = 0; u < g->n_used; ++u) {
        const int level = g->used[u];
        const obb_grid_level *lv = &g->levels[level];
        const double size = obb_cell_size(g, level);
        /* A box of this level that meets the query has its lower corner within max_extent below the query's: widen
         * by more than the rounding of that subtraction and of the extents themselves. */
        const double reach = lv->max_extent * (1.0 + 1e-9);
        const double lo_x = box[0] - reach - 8.0 * DBL_EPSILON * (fabs(box[0]) + reach);
        const double lo_y = box[1] - reach - 8.0 * DBL_EPSILON * (fabs(box[1]) + reach);
        const int64_t x0 = obb_cell_index(lo_x, g->origin_x, size), x1 = obb_cell_index(box[2], g->origin_x, size);
        const int64_t y0 = obb_cell_index(lo_y, g->origin_y, size), y1 = obb_cell_index(box[3], g->origin_y, size);
        const double cells = (double)(x1 - x0 + 1) * (double)(y1 - y0 + 1);
        if (cells > (double)lv->count) {
            for (int64_t i = 0; i < lv->count; ++i)
                if (obb_suppresses(d, lv->rank[i], r)) return 1;
            continue;
        }
        for (int64_t ix = x0; ix <= x1; ++ix)
            for (int64_t iy = y0; iy <= y1; ++iy) {
                const uint64_t key = obb_cell_key(label, level, ix, iy);
                for (int64_t e = g->head[key & g->mask]; e >= 0; e = g->entries[e].next) {
                    const obb_grid_entry *en = &g->entries[e];
                    if (en->key == key && obb_suppresses(d, en->rank, r)) return 1;
                }
            }
    }
    return 0;
}

/* Greedy NMS: walk boxes by descending score; a box is suppressed when its IoU with an already kept box is
 * > iou_threshold (and, when labels is not NULL, only by a kept box of the same label). Boxes that are not valid
 * (w <= 0, h <= 0) are kept and suppress nothing. Writes the kept indices, by descending score, into keep and
 * returns their count; -1 when out of memory. Scores must not be NaN (checked by the caller). */
OBB_EXPORT int64_t obbmeta_nms(const void *boxes, const void *scores, int is_double, const int64_t *labels,
                               int64_t n, double iou_threshold, int64_t *keep)
{
    if (n <= 0) return 0;
    int64_t buckets = 16;
    while (buckets < 2 * n && buckets < ((int64_t)1 << 40)) buckets *= 2;
    obb_ranked *order = (obb_ranked *)malloc((size_t)n * sizeof(obb_ranked));
    obb_prep *box = (obb_prep *)malloc((size_t)n * sizeof(obb_prep));
    int64_t *label = labels ? (int64_t *)malloc((size_t)n * sizeof(int64_t)) : NULL;
    unsigned char *valid = (unsigned char *)malloc((size_t)n);
    obb_grid g = {0};
    g.head = (int64_t *)malloc((size_t)buckets * sizeof(int64_t));
    g.mask = (uint64_t)buckets - 1;
    int64_t count = -1;
    if (!order || !box || (labels && !label) || !valid || !g.head) goto done;

    for (int64_t i = 0; i < n; ++i) {
        order[i].score = is_double ? ((const double *)scores)[i] : (double)((const float *)scores)[i];
        order[i].index = i;
    }
    qsort(order, (size_t)n, sizeof(obb_ranked), obb_rank_compare);
    double min_x = INFINITY, min_y = INFINITY, min_ext = INFINITY, max_ext = 0.0;
    for (int64_t r = 0; r < n; ++r) {
        const obb_box raw = obb_load(boxes, is_double, order[r].index);
        box[r] = obb_prep_make(&raw);
        if (label) label[r] = labels[order[r].index];
        valid[r] = (unsigned char)box[r].valid;
        if (!valid[r]) continue;
        const double a[4] = {box[r].x1, box[r].y1, box[r].x2, box[r].y2};
        const double ext = fmax(a[2] - a[0], a[3] - a[1]);
        min_x = fmin(min_x, a[0]);
        min_y = fmin(min_y, a[1]);
        if (ext > 0.0) min_ext = fmin(min_ext, ext);
        max_ext = fmax(max_ext, ext);
    }
    for (int64_t b = 0; b < buckets; ++b) g.head[b] = -1;
    g.origin_x = isfinite(min_x) ? min_x : 0.0;
    g.origin_y = isfinite(min_y) ? min_y : 0.0;
    /* Level 0 fits the smallest box; every box fits some level (the top one absorbs anything larger). */
    g.base = isfinite(min_ext) ? fmax(min_ext, ldexp(max_ext, -(OBB_GRID_LEVELS - 2))) : 1.0;
    if (!(g.base > 0.0) || !isfinite(g.base)) g.base = 1.0;

    const obb_nms_data d = {box, label, iou_threshold};
    count = 0;
    for (int64_t r = 0; r < n; ++r) {
        if (!valid[r]) { /* an invalid box overlaps nothing: kept, never entered */
            keep[count++] = order[r].index;
            continue;
        }
        if (obb_grid_query(&g, &d, r)) continue;
        keep[count++] = order[r].index;
        const double a[4] = {box[r].x1, box[r].y1, box[r].x2, box[r].y2};
        if (!obb_grid_insert(&g, r, label ? label[r] : 0, a)) {
            count = -1;
            break;
        }
    }
done:
    for (int l = 0; l < OBB_GRID_LEVELS; ++l) free(g.levels[l].rank);
    free(g.entries);
    free(g.head);
    free(order);
    free(box);
    free(label);
    free(valid);
    return count;
}

/* ---------------------------------------------------------------- a tracker's candidate pairs and matching
 * (kernels/obb_match.h; the tracker's step, kernels/track_cpu.c, uses the same two functions) */

OBB_EXPORT int64_t obbmeta_aabb_overlap_pairs(const double *a, int64_t n, const double *b, int64_t m, int64_t *ti,
                                              int64_t *di, int64_t capacity)
{
    int64_t *pairs = NULL;
    const int64_t count = obb_overlap_pairs(a, n, b, m, &pairs);
    for (int64_t k = 0; k < count && k < capacity; ++k) {
        ti[k] = pairs[2 * k];
        di[k] = pairs[2 * k + 1];
    }
    free(pairs);
    return count;
}

OBB_EXPORT int64_t obbmeta_greedy_match(const int64_t *ti, const int64_t *di, const double *iou, int64_t k,
                                        double threshold, uint8_t *track_free, uint8_t *det_free, int64_t *mt,
                                        int64_t *md)
{
    return obb_greedy_match(ti, di, iou, k, threshold, track_free, det_free, mt, md);
}
