/* obbmeta: which detection continues which track, on the host: the candidate pairs of two sets of axis-aligned
 * boxes (a sweep over x) and greedy one-to-one matching by descending score. One implementation, compiled into the
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
 * the caller frees; returns how many, -1 when out of memory (then *pairs_out is NULL). A sweep over x keeps the
 * boxes whose x-range is still open, so the cost grows with the pairs that overlap in x, not with n x m. Boxes with
 * x2 <= x1 or y2 <= y1 overlap nothing. Coordinates must be finite (checked by the caller). */

typedef struct {
    double x1;
    int64_t index; /* the box's row in a or b */
    int side;      /* 0: a, 1: b */
} obb_sweep_event;

static inline int obb_sweep_compare(const void *pa, const void *pb)
{
    const obb_sweep_event *a = (const obb_sweep_event *)pa, *b = (const obb_sweep_event *)pb;
    if (a->x1 < b->x1) return -1;
    if (a->x1 > b->x1) return 1;
    if (a->side != b->side) return a->side - b->side;
    return (a->index > b->index) - (a->index < b->index);
}

static inline int obb_pair_compare(const void *pa, const void *pb)
{
    const int64_t *a = (const int64_t *)pa, *b = (const int64_t *)pb;
    if (a[0] != b[0]) return (a[0] > b[0]) - (a[0] < b[0]);
    return (a[1] > b[1]) - (a[1] < b[1]);
}

static inline int64_t obb_overlap_pairs(const double *a, int64_t n, const double *b, int64_t m, int64_t **pairs_out)
{
    const double *box[2] = {a, b};
    obb_sweep_event *events = (obb_sweep_event *)malloc(sizeof(obb_sweep_event) * (size_t)(n + m + 1));
    int64_t *open[2] = {(int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1)),
                        (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1))};
    int64_t n_open[2] = {0, 0}, count = 0, pairs_capacity = 64, events_n = 0;
    int64_t *pairs = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)pairs_capacity);
    if (!events || !open[0] || !open[1] || !pairs) {
        count = -1;
        goto done;
    }
    for (int side = 0; side < 2; ++side) {
        const int64_t k = side ? m : n;
        for (int64_t i = 0; i < k; ++i) {
            const double *p = box[side] + 4 * i;
            if (p[2] > p[0] && p[3] > p[1]) events[events_n++] = (obb_sweep_event){p[0], i, side};
        }
    }
    qsort(events, (size_t)events_n, sizeof(obb_sweep_event), obb_sweep_compare);
    for (int64_t e = 0; e < events_n; ++e) {
        const int side = events[e].side, other = 1 - side;
        const int64_t i = events[e].index;
        const double *p = box[side] + 4 * i;
        /* the other side's open boxes: those ending at or before this one's start never meet it or a later one */
        int64_t keep = 0;
        for (int64_t k = 0; k < n_open[other]; ++k) {
            const int64_t j = open[other][k];
            const double *q = box[other] + 4 * j;
            if (!(q[2] > p[0])) continue; /* closed */
            open[other][keep++] = j;
            /* x: q starts at or before p (sorted), q ends after p starts, p ends after its start: they overlap */
            if (fmin(p[3], q[3]) > fmax(p[1], q[1])) {
                if (count == pairs_capacity) {
                    int64_t *grown = (int64_t *)realloc(pairs, sizeof(int64_t) * 4 * (size_t)pairs_capacity);
                    if (!grown) {
                        count = -1;
                        goto done;
                    }
                    pairs = grown;
                    pairs_capacity *= 2;
                }
                pairs[2 * count] = side ? j : i;
                pairs[2 * count + 1] = side ? i : j;
                ++count;
            }
        }
        n_open[other] = keep;
        open[side][n_open[side]++] = i;
    }
    qsort(pairs, (size_t)count, 2 * sizeof(int64_t), obb_pair_compare);
done:
    free(events);
    free(open[0]);
    free(open[1]);
    if (count < 0) {
        free(pairs);
        pairs = NULL;
    }
    *pairs_out = pairs;
    return count;
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
