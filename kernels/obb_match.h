/* obbmeta: which detection continues which track, on the host: the candidate pairs of two sets of axis-aligned
 * boxes (a uniform grid) and greedy one-to-one matching by descending score. One implementation, compiled into the
 * geometry core (kernels/geometry_cpu.c: obbmeta_aabb_overlap_pairs / obbmeta_greedy_match, for Python) and the
 * tracker's step (kernels/track_cpu.c). */
#ifndef OBBMETA_OBB_MATCH_H
#define OBBMETA_OBB_MATCH_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- overlapping axis-aligned boxes
 *
 * Every pair (i, j) of a[i] (n boxes) and b[j] (m boxes), each float64 (x1, y1, x2, y2), whose overlap has positive
 * width and height: min(x2) - max(x1) > 0 and min(y2) - max(y1) > 0 (for finite doubles, a - b > 0 exactly when
 * a > b, so the comparisons below decide what those differences would). Sets *pairs_out to a malloc'ed array of
 * (i, j) int64 pairs, row-major (i ascending, then j: the order of numpy.nonzero on the dense (n, m) mask), which
 * the caller frees; returns how many, -1 when out of memory (then *pairs_out is NULL). Boxes with x2 <= x1 or
 * y2 <= y1 overlap nothing. Coordinates must be finite (checked by the caller).
 *
 * A uniform grid over the boxes' extent, its cells about twice the b boxes' mean size: each b box is listed in the
 * cells it covers, each a box looks only in its own cells, and a pair is taken in one cell only, the one holding
 * the lower-left corner of the two boxes' intersection (it lies in both boxes, and the cell of a coordinate grows
 * with it, so that cell is among both boxes' cells). The cost grows with the pairs in shared cells, not with
 * n x m: rows and columns of parked cars, which a sweep along one axis would see as long open lists, cost what
 * their neighbours cost. The grid has at most 4 (n + m) + 16 cells and 16 (n + m) + 64 listings (cells are
 * merged until it does); a degenerate extent (one point, or wider than a double) is one cell. */

typedef struct {
    double origin, span; /* the grid's extent along one axis */
    int64_t cells;
} obb_grid_axis;

static inline int64_t obb_grid_cell(const obb_grid_axis *g, double v)
{
    if (g->cells <= 1) return 0;
    const double t = (v - g->origin) / g->span * (double)g->cells; /* monotone in v; finite: v lies in the extent */
    if (!(t > 0.0)) return 0;
    if (t >= (double)(g->cells - 1)) return g->cells - 1;
    return (int64_t)t;
}

/* min / max of finite values (fmin / fmax are library calls unless NaN is ruled out at compile time) */
static inline double obb_min(double a, double b) { return a < b ? a : b; }
static inline double obb_max(double a, double b) { return a > b ? a : b; }

static inline int obb_boxes_overlap(const double *p, const double *q)
{
    return obb_min(p[2], q[2]) > obb_max(p[0], q[0]) && obb_min(p[3], q[3]) > obb_max(p[1], q[1]);
}

static inline int obb_index_compare(const void *pa, const void *pb)
{
    const int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

static inline int64_t obb_overlap_pairs(const double *a, int64_t n, const double *b, int64_t m, int64_t **pairs_out)
{
    int64_t count = 0, capacity = 64, listings = 0, row_capacity = 64;
    int64_t *pairs = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)capacity);
    int64_t *start = NULL, *listed = NULL, *row = (int64_t *)malloc(sizeof(int64_t) * (size_t)row_capacity);
    if (!pairs || !row) goto oom;
    /* the extent of every valid box, and the b boxes' mean size */
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY}, size[2] = {0.0, 0.0};
    int64_t valid_b = 0, valid_a = 0;
    for (int side = 0; side < 2; ++side) {
        const double *box = side ? b : a;
        for (int64_t i = 0; i < (side ? m : n); ++i) {
            const double *p = box + 4 * i;
            if (!(p[2] > p[0] && p[3] > p[1])) continue;
            for (int d = 0; d < 2; ++d) {
                lo[d] = fmin(lo[d], p[d]);
                hi[d] = fmax(hi[d], p[d + 2]);
                if (side) size[d] += (p[d + 2] - p[d]) / (double)m; /* mean, without an overflowing sum */
            }
            if (side)
                ++valid_b;
            else
                ++valid_a;
        }
    }
    if (!valid_a || !valid_b) goto done;
    obb_grid_axis g[2];
    const int64_t max_cells = 4 * (n + m) + 16, max_listings = 16 * (n + m) + 64;
    for (int d = 0; d < 2; ++d) {
        const double span = hi[d] - lo[d], cell = 2.0 * size[d] * (double)m / (double)valid_b;
        double cells = isfinite(span) && span > 0.0 && cell > 0.0 ? span / cell : 1.0;
        if (!(cells >= 1.0)) cells = 1.0;
        if (cells > 1024.0) cells = 1024.0;
        g[d] = (obb_grid_axis){lo[d], span, (int64_t)cells};
    }
    for (;;) { /* merge cells until the grid and its listings are small enough */
        while (g[0].cells * g[1].cells > max_cells) {
            const int d = g[0].cells >= g[1].cells ? 0 : 1;
            g[d].cells = (g[d].cells + 1) / 2;
        }
        listings = 0;
        for (int64_t j = 0; j < m; ++j) {
            const double *q = b + 4 * j;
            if (!(q[2] > q[0] && q[3] > q[1])) continue;
            listings += (obb_grid_cell(&g[0], q[2]) - obb_grid_cell(&g[0], q[0]) + 1) *
                        (obb_grid_cell(&g[1], q[3]) - obb_grid_cell(&g[1], q[1]) + 1);
        }
        if (listings <= max_listings || (g[0].cells == 1 && g[1].cells == 1)) break;
        g[0].cells = (g[0].cells + 1) / 2;
        g[1].cells = (g[1].cells + 1) / 2;
    }
    const int64_t cells = g[0].cells * g[1].cells;
    start = (int64_t *)calloc((size_t)(cells + 1), sizeof(int64_t));
    listed = (int64_t *)malloc(sizeof(int64_t) * (size_t)(listings + 1));
    if (!start || !listed) goto oom;
    for (int pass = 0; pass < 2; ++pass) { /* count per cell, then list (j ascending within each cell) */
        for (int64_t j = 0; j < m; ++j) {
            const double *q = b + 4 * j;
            if (!(q[2] > q[0] && q[3] > q[1])) continue;
            const int64_t x0 = obb_grid_cell(&g[0], q[0]), x1 = obb_grid_cell(&g[0], q[2]);
            const int64_t y0 = obb_grid_cell(&g[1], q[1]), y1 = obb_grid_cell(&g[1], q[3]);
            for (int64_t y = y0; y <= y1; ++y)
                for (int64_t x = x0; x <= x1; ++x) {
                    if (pass == 0)
                        ++start[y * g[0].cells + x + 1];
                    else
                        listed[start[y * g[0].cells + x]++] = j;
                }
        }
        if (pass == 0)
            for (int64_t c = 0; c < cells; ++c) start[c + 1] += start[c];
        else
            for (int64_t c = cells; c > 0; --c) start[c] = start[c - 1]; /* the fill moved each start to its end */
        if (pass == 1) start[0] = 0;
    }
    for (int64_t i = 0; i < n; ++i) {
        const double *p = a + 4 * i;
        if (!(p[2] > p[0] && p[3] > p[1])) continue;
        const int64_t x0 = obb_grid_cell(&g[0], p[0]), x1 = obb_grid_cell(&g[0], p[2]);
        const int64_t y0 = obb_grid_cell(&g[1], p[1]), y1 = obb_grid_cell(&g[1], p[3]);
        int64_t found = 0;
        for (int64_t y = y0; y <= y1; ++y)
            for (int64_t x = x0; x <= x1; ++x) {
                const int64_t c = y * g[0].cells + x;
                for (int64_t k = start[c]; k < start[c + 1]; ++k) {
                    const int64_t j = listed[k];
                    const double *q = b + 4 * j;
                    if (!obb_boxes_overlap(p, q)) continue;
                    if (obb_grid_cell(&g[0], obb_max(p[0], q[0])) != x || obb_grid_cell(&g[1], obb_max(p[1], q[1])) != y)
                        continue; /* taken in the cell of the intersection's lower-left corner */
                    if (found == row_capacity) {
                        int64_t *grown = (int64_t *)realloc(row, sizeof(int64_t) * 2 * (size_t)row_capacity);
                        if (!grown) goto oom;
                        row = grown;
                        row_capacity *= 2;
                    }
                    row[found++] = j;
                }
            }
        if (found > 1) qsort(row, (size_t)found, sizeof(int64_t), obb_index_compare);
        if (count + found > capacity) {
            while (count + found > capacity) capacity *= 2;
            int64_t *grown = (int64_t *)realloc(pairs, sizeof(int64_t) * 2 * (size_t)capacity);
            if (!grown) goto oom;
            pairs = grown;
        }
        for (int64_t k = 0; k < found; ++k) {
            pairs[2 * count] = i;
            pairs[2 * count + 1] = row[k];
            ++count;
        }
    }
done:
    free(start);
    free(listed);
    free(row);
    *pairs_out = pairs;
    return count;
oom:
    free(start);
    free(listed);
    free(row);
    free(pairs);
    *pairs_out = NULL;
    return -1;
}

/* ---------------------------------------------------------------- greedy one-to-one matching
 *
 * The k candidate pairs (ti[p], di[p]) with score iou[p], taken by descending score (ties: lower track, then lower
 * detection first), each kept when its score is >= threshold and both its track and its detection are still free
 * (track_free / det_free: one byte each, nonzero = free; cleared as pairs are taken). Writes the taken pairs, in the
 * order taken, to mt / md and returns how many; -1 when out of memory. Indices must lie in [0, n_tracks) and
 * [0, n_detections) and scores must not be NaN (checked by the caller). */

typedef struct {
    double score;
    int64_t t, d;
} obb_scored_pair;

static inline int obb_scored_pair_compare(const void *pa, const void *pb)
{
    const obb_scored_pair *a = (const obb_scored_pair *)pa, *b = (const obb_scored_pair *)pb;
    if (a->score > b->score) return -1;
    if (a->score < b->score) return 1;
    if (a->t != b->t) return (a->t > b->t) - (a->t < b->t);
    return (a->d > b->d) - (a->d < b->d);
}

/* The scan of greedy matching over pairs already in taking order (obb_scored_pair_compare): each pair whose score is
 * >= threshold and whose track and detection are both free is taken. Returns how many. */
static inline int64_t obb_greedy_scan(const obb_scored_pair *p, int64_t n, double threshold, uint8_t *track_free,
                               uint8_t *det_free, int64_t *mt, int64_t *md)
{
    int64_t taken = 0;
    for (int64_t q = 0; q < n; ++q) {
        if (!(p[q].score >= threshold) || !track_free[p[q].t] || !det_free[p[q].d]) continue;
        track_free[p[q].t] = det_free[p[q].d] = 0;
        mt[taken] = p[q].t;
        md[taken++] = p[q].d;
    }
    return taken;
}

static inline int64_t obb_greedy_match(const int64_t *ti, const int64_t *di, const double *iou, int64_t k, double threshold,
                                uint8_t *track_free, uint8_t *det_free, int64_t *mt, int64_t *md)
{
    obb_scored_pair *p = (obb_scored_pair *)malloc(sizeof(obb_scored_pair) * (size_t)(k + 1));
    if (!p) return -1;
    int64_t n = 0;
    for (int64_t q = 0; q < k; ++q)
        if (iou[q] >= threshold && track_free[ti[q]] && det_free[di[q]]) p[n++] = (obb_scored_pair){iou[q], ti[q], di[q]};
    qsort(p, (size_t)n, sizeof(obb_scored_pair), obb_scored_pair_compare);
    const int64_t taken = obb_greedy_scan(p, n, threshold, track_free, det_free, mt, md);
    free(p);
    return taken;
}

#endif
