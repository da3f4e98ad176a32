/* obbmeta: host build of the oriented-box geometry (kernels/obb_geometry.h) behind a tiny C ABI for ctypes.
 * All pointers are raw tensor data (contiguous float32 boxes (n, 5), float32 scores, int64 labels). */
#include <stdint.h>
#include <stdlib.h>

#include "obb_geometry.h"

#define OBB_EXPORT __attribute__((visibility("default")))

OBB_EXPORT int obbmeta_geometry_abi_version(void) { return 1; }

OBB_EXPORT void obbmeta_iou_matrix(const float *a, int64_t n, const float *b, int64_t m, float *out)
{
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) out[i * m + j] = (float)obb_iou(a + 5 * i, b + 5 * j);
}

OBB_EXPORT void obbmeta_iou_aligned(const float *a, const float *b, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; ++i) out[i] = (float)obb_iou(a + 5 * i, b + 5 * i);
}

typedef struct {
    float score;
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

/* Greedy NMS: walk boxes by descending score; a box is suppressed when its IoU with an already kept box is
 * > iou_threshold (and, when labels is not NULL, only by a kept box of the same label). Writes the kept
 * indices, by descending score, into keep and returns their count; -1 when out of memory.
 * Scores must not be NaN (checked by the caller). */
OBB_EXPORT int64_t obbmeta_nms(const float *boxes, const float *scores, const int64_t *labels, int64_t n,
                               double iou_threshold, int64_t *keep)
{
    if (n <= 0) return 0;
    obb_ranked *order = (obb_ranked *)malloc((size_t)n * sizeof(obb_ranked));
    double *aabb = (double *)malloc((size_t)n * 4 * sizeof(double));
    unsigned char *state = (unsigned char *)calloc((size_t)n, 1); /* bit 0: suppressed, bit 1: valid */
    if (!order || !aabb || !state) {
        free(order);
        free(aabb);
        free(state);
        return -1;
    }
    for (int64_t i = 0; i < n; ++i) {
        order[i].score = scores[i];
        order[i].index = i;
    }
    qsort(order, (size_t)n, sizeof(obb_ranked), obb_rank_compare);
    for (int64_t r = 0; r < n; ++r) {
        const float *b = boxes + 5 * order[r].index;
        if (obb_is_valid(b)) {
            state[r] = 2;
            obb_aabb(b, aabb + 4 * r);
        }
    }
    int64_t count = 0;
    for (int64_t r = 0; r < n; ++r) {
        if (state[r] & 1) continue;
        const int64_t i = order[r].index;
        keep[count++] = i;
        if (!(state[r] & 2)) continue; /* an invalid box overlaps nothing */
        const float *bi = boxes + 5 * i;
        const double *ai = aabb + 4 * r;
        for (int64_t t = r + 1; t < n; ++t) {
            if (state[t] != 2) continue; /* already suppressed, or invalid */
            const int64_t j = order[t].index;
            if (labels && labels[j] != labels[i]) continue;
            const double *aj = aabb + 4 * t;
            /* Disjoint bounding boxes: IoU is 0, never above a threshold >= 0. */
            if (aj[0] > ai[2] || aj[2] < ai[0] || aj[1] > ai[3] || aj[3] < ai[1]) continue;
            if (obb_iou(bi, boxes + 5 * j) > iou_threshold) state[t] |= 1;
        }
    }
    free(order);
    free(aabb);
    free(state);
    return count;
}
