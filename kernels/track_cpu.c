/* obbmeta: the tracker's arithmetic on the host, behind a small C ABI for ctypes (obbmeta/track/_core.py).
 *
 * - Constant-velocity Kalman filters, one 2-state (value, velocity) filter per dimension with the 2x2 covariance
 *   (p00, p01, p11): SORT's and ByteTrack's filter with diagonal noise splits exactly into these. KalmanBank
 *   (obbmeta/track/kalman.py) and the tracker's step share them.
 * - The motion noise (MotionNoise.stds): position and size terms proportional to sqrt(max(w * h, 1)), angle terms
 *   constant.
 * - align: a measured box re-described with the angle nearest the track's (obbmeta/track/angles.py).
 * - obbmeta_track_step: one frame of one stream of OrientedTracker (obbmeta/track/tracker.py documents what it
 *   does): predict, candidate pairs (kernels/obb_match.h) with the exact rotated IoU (kernels/obb_geometry.h) or
 *   the IoU of the axis-aligned boxes, ByteTrack's three greedy stages, updates, new tracks, and what the frame
 *   reports. tests/track/reference_tracker.py is the same step written with NumPy, the oracle of its tests.
 *
 * Every array is C-contiguous; boxes and filter arrays are (n, 5) float64 [cx, cy, w, h, angle] unless stated.
 * Arithmetic is written in the order NumPy's expressions evaluate (no contraction into FMA: -std=c11 keeps it off),
 * so results are bit for bit those of the NumPy reference apart from the cosines and sines of the axis-aligned
 * boxes (libm and NumPy may differ by an ulp). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "obb_abi.h"
#include "obb_geometry.h"
#include "obb_match.h"
#include "obb_track.h"

#define OBB_EXPORT __attribute__((visibility("default")))
#define OBB_TRACK_DIMS 5
#define OBB_PI 3.141592653589793 /* math.pi */
#define OBB_MIN_SIDE 1e-2        /* tracker.MIN_SIDE: filtered widths / heights never go below it */

OBB_EXPORT int obbmeta_track_abi_version(void) { return 1; }

OBB_EXPORT int64_t obbmeta_track_abi_table(const char **names, int64_t *values, int64_t capacity)
{
    static const obb_abi_entry table[] = {
        OBB_ABI_SIZE(obb_track_params),           OBB_ABI_OFFSET(obb_track_params, buffer),
        OBB_ABI_OFFSET(obb_track_params, angle_velocity), OBB_ABI_OFFSET(obb_track_params, min_hits),
        OBB_ABI_OFFSET(obb_track_params, heading), OBB_ABI_SIZE(obb_tracks),
        OBB_ABI_OFFSET(obb_tracks, confirmed),    OBB_ABI_OFFSET(obb_tracks, p11),
        OBB_ABI_OFFSET(obb_tracks, n),            OBB_ABI_SIZE(obb_detections),
        OBB_ABI_OFFSET(obb_detections, labels),   OBB_ABI_OFFSET(obb_detections, n),
        OBB_ABI_SIZE(obb_track_report),           OBB_ABI_OFFSET(obb_track_report, pred_labels),
        OBB_ABI_OFFSET(obb_track_report, pred_scores), OBB_ABI_OFFSET(obb_track_report, n_pred),
    };
    return OBB_ABI_COPY(table, names, values, capacity);
}

/* numpy.maximum(a, b) for a b that is never NaN: NaN stays NaN (fmax would return b) */
static inline double obb_np_max(double a, double b) { return isnan(a) || a >= b ? a : b; }

/* ---------------------------------------------------------------- the filter, per (value, velocity) pair */

static inline void obb_kf_predict(double *mean, double *velocity, double *p00, double *p01, double *p11,
                                  double value_std, double velocity_std)
{
    const double a = *p00, b = *p01, c = *p11;
    *mean = *mean + *velocity;
    *p00 = a + 2.0 * b + c + value_std * value_std;
    *p01 = b + c;
    *p11 = c + velocity_std * velocity_std;
}

static inline void obb_kf_update(double *mean, double *velocity, double *p00, double *p01, double *p11,
                                 double value, double measurement_std)
{
    const double a = *p00, b = *p01, c = *p11;
    const double residual = value - *mean;
    const double s = a + measurement_std * measurement_std;
    const double k0 = a / s, k1 = b / s;
    *mean = *mean + k0 * residual;
    *velocity = *velocity + k1 * residual;
    *p00 = (1.0 - k0) * a;
    *p01 = (1.0 - k0) * b;
    *p11 = c - k1 * b;
}

/* KalmanBank.predict: filters rows[r] (or row r when rows is NULL), r < n_rows, over dims of width `dims`; the
 * standard deviations are (n_rows, dims) in row order. */
OBB_EXPORT void obbmeta_kalman_predict(double *mean, double *velocity, double *p00, double *p01, double *p11,
                                       int64_t dims, const int64_t *rows, int64_t n_rows, const double *value_std,
                                       const double *velocity_std)
{
    for (int64_t r = 0; r < n_rows; ++r) {
        const int64_t i = rows ? rows[r] : r;
        for (int64_t d = 0; d < dims; ++d) {
            const int64_t k = i * dims + d;
            obb_kf_predict(mean + k, velocity + k, p00 + k, p01 + k, p11 + k, value_std[r * dims + d],
                           velocity_std[r * dims + d]);
        }
    }
}

/* KalmanBank.update: filters rows[r] (distinct), measured `value` (n_rows, n_cols) with noise `measurement_std`
 * (n_rows, n_cols) in dimensions cols[c] (or c when cols is NULL) of `dims`. */
OBB_EXPORT void obbmeta_kalman_update(double *mean, double *velocity, double *p00, double *p01, double *p11,
                                      int64_t dims, const int64_t *rows, int64_t n_rows, const int64_t *cols,
                                      int64_t n_cols, const double *value, const double *measurement_std)
{
    for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t c = 0; c < n_cols; ++c) {
            const int64_t k = rows[r] * dims + (cols ? cols[c] : c);
            obb_kf_update(mean + k, velocity + k, p00 + k, p01 + k, p11 + k, value[r * n_cols + c],
                          measurement_std[r * n_cols + c]);
        }
}

/* ---------------------------------------------------------------- motion noise */

/* MotionNoise.stds of one box of width w and height h: (process value, process velocity, measurement) standard
 * deviations of the five dimensions. */
static void obb_noise(const obb_track_params *p, double w, double h, double value[5], double velocity[5],
                      double measure[5])
{
    const double size = sqrt(obb_np_max(w * h, 1.0));
    for (int d = 0; d < 4; ++d) {
        value[d] = p->position * size;
        velocity[d] = p->velocity * size;
        measure[d] = p->position * size;
    }
    value[4] = p->angle_process;
    velocity[4] = p->angle_velocity;
    measure[4] = p->angle;
}

/* MotionNoise.stds on n boxes' (w, h) (n, 2): three (n, 5) arrays. */
OBB_EXPORT void obbmeta_motion_noise(const obb_track_params *p, const double *wh, int64_t n, double *value,
                                     double *velocity, double *measure)
{
    for (int64_t i = 0; i < n; ++i)
        obb_noise(p, wh[2 * i], wh[2 * i + 1], value + 5 * i, velocity + 5 * i, measure + 5 * i);
}

/* ---------------------------------------------------------------- the angle over time */

/* numpy.mod(v, period) for period > 0: the remainder with the sign of the period. */
static inline double obb_mod(double v, double period)
{
    double r = fmod(v, period);
    if (r != 0.0) {
        if (r < 0.0) r += period;
    } else {
        r = 0.0; /* +0, as NumPy gives for a positive divisor */
    }
    return r;
}

/* geometry.wrap_angle: into [-period/2, period/2). */
static inline double obb_wrap(double v, double period)
{
    const double r = obb_mod(v, period);
    return r >= period - r ? r - period : r;
}

/* angles.align_to of one box (in place): the description of the rectangle (or heading) whose angle is nearest
 * `reference`. */
static inline void obb_align(double b[5], double reference, int heading)
{
    if (heading) {
        b[4] = reference + obb_wrap(b[4] - reference, 2.0 * OBB_PI);
        return;
    }
    const double half_pi = 0.5 * OBB_PI;
    const double k = rint((b[4] - reference) / half_pi);
    b[4] -= k * half_pi;
    if (fabs(fmod(k, 2.0)) == 1.0) {
        const double w = b[2];
        b[2] = b[3];
        b[3] = w;
    }
}

/* align_to on n boxes (in place) with references (n,). */
OBB_EXPORT void obbmeta_align_to(double *xywhr, const double *reference, int64_t n, int heading)
{
    for (int64_t i = 0; i < n; ++i) obb_align(xywhr + 5 * i, reference[i], heading);
}

/* ---------------------------------------------------------------- one frame of one stream */

static inline void obb_track_box(const obb_tracks *t, int64_t i, double out[5]) /* _Tracks.boxes: sides clamped */
{
    for (int d = 0; d < 5; ++d) out[d] = t->mean[5 * i + d];
    out[2] = obb_np_max(out[2], OBB_MIN_SIDE);
    out[3] = obb_np_max(out[3], OBB_MIN_SIDE);
}

/* both sides lengthened by 2 * buffer * sqrt(w * h) around the same centre and angle (C-BIoU-style buffering) */
static inline void obb_buffered(double b[5], double buffer)
{
    if (buffer == 0.0) return;
    const double margin = 2.0 * buffer * sqrt(b[2] * b[3]);
    b[2] += margin;
    b[3] += margin;
}

static void obb_copy_row(const obb_tracks *from, int64_t i, obb_tracks *to, int64_t j)
{
    to->ids[j] = from->ids[i];
    to->labels[j] = from->labels[i];
    to->hits[j] = from->hits[i];
    to->lost[j] = from->lost[i];
    to->confirmed[j] = from->confirmed[i];
    to->score[j] = from->score[i];
    memmove(to->mean + 5 * j, from->mean + 5 * i, 5 * sizeof(double));
    memmove(to->velocity + 5 * j, from->velocity + 5 * i, 5 * sizeof(double));
    memmove(to->p00 + 5 * j, from->p00 + 5 * i, 5 * sizeof(double));
    memmove(to->p01 + 5 * j, from->p01 + 5 * i, 5 * sizeof(double));
    memmove(to->p11 + 5 * j, from->p11 + 5 * i, 5 * sizeof(double));
}

static void obb_predict_tracks(const obb_track_params *p, obb_tracks *t)
{
    for (int64_t i = 0; i < t->n; ++i) {
        double q_value[5], q_velocity[5], unused[5];
        const double *m = t->mean + 5 * i;
        obb_noise(p, obb_np_max(m[2], OBB_MIN_SIDE), obb_np_max(m[3], OBB_MIN_SIDE), q_value, q_velocity, unused);
        for (int d = 0; d < 5; ++d) {
            const int64_t k = 5 * i + d;
            obb_kf_predict(t->mean + k, t->velocity + k, t->p00 + k, t->p01 + k, t->p11 + k, q_value[d],
                           q_velocity[d]);
        }
    }
}

/* The reported tracks: confirmed, lost <= output_lost, and (on a detection frame) not matched on it. */
static void obb_report_tracks(const obb_track_params *p, const obb_tracks *t, int skip_matched, obb_track_report *r)
{
    int64_t k = 0;
    for (int64_t i = 0; i < t->n; ++i) {
        if (!t->confirmed[i] || t->lost[i] > p->output_lost || (skip_matched && t->lost[i] < 1)) continue;
        double b[5];
        obb_track_box(t, i, b);
        for (int d = 0; d < 5; ++d) r->pred_xywhr[5 * k + d] = (float)b[d];
        r->pred_ids[k] = t->ids[i];
        r->pred_labels[k] = t->labels[i];
        r->pred_scores[k] = t->score[i];
        ++k;
    }
    r->n_pred = k;
}

/* The candidate pairs of boxes `tb` (nt, 5) and `db` (nd, 5) (association.candidate_ious): every pair whose
 * axis-aligned boxes overlap after both are enlarged by `buffer` (obb_buffered), of one class when both
 * label arrays are given, scored by the IoU of the enlarged boxes (the exact rotated IoU of their float32 values, as
 * geometry.box_iou_rotated_host computes it, or with `aabb` the IoU of their axis-aligned boxes); pairs of IoU 0
 * are dropped. Sets the three malloc'ed arrays (track index, detection index, IoU; row-major) and returns their
 * length, or -1 when out of memory (then they are NULL). */
static int64_t obb_candidates(const double *tb, const int64_t *tl, int64_t nt, const double *db, const int64_t *dl,
                              int64_t nd, int aabb, double buffer, int64_t **ti_out, int64_t **di_out,
                              double **iou_out)
{
    double *boxes = (double *)malloc(sizeof(double) * 5 * (size_t)(nt + nd + 1));
    double *bounds = (double *)malloc(sizeof(double) * 4 * (size_t)(nt + nd + 1));
    /* the exact IoU's per-box part (its sines and cosines), once per box rather than once per pair */
    obb_prep *prep = aabb ? NULL : (obb_prep *)malloc(sizeof(obb_prep) * (size_t)(nt + nd + 1));
    int64_t *pairs = NULL, *ti = NULL, *di = NULL, count = 0;
    double *iou = NULL;
    if (!boxes || !bounds || (!aabb && !prep)) goto oom;
    memcpy(boxes, tb, sizeof(double) * 5 * (size_t)nt);
    memcpy(boxes + 5 * nt, db, sizeof(double) * 5 * (size_t)nd);
    for (int64_t i = 0; i < nt + nd; ++i) {
        obb_buffered(boxes + 5 * i, buffer);
        const obb_box grown = obb_box_from_double(boxes + 5 * i);
        obb_box_aabb(&grown, bounds + 4 * i); /* geometry.aabb's box: halving is exact, so c w/2 + s h/2 is
                                                * 0.5 (c w + s h) but for subnormal or overflowing sides */
        if (prep) { /* box_iou_rotated_host: the float32 values of the boxes */
            float f[5];
            for (int d = 0; d < 5; ++d) f[d] = (float)boxes[5 * i + d];
            const obb_box b = obb_box_from_float(f);
            prep[i] = obb_prep_make(&b);
        }
    }
    const double *ta = bounds, *da = bounds + 4 * nt;
    const int64_t found = obb_overlap_pairs(ta, nt, da, nd, &pairs);
    if (found < 0) goto oom;
    ti = (int64_t *)malloc(sizeof(int64_t) * (size_t)(found + 1));
    di = (int64_t *)malloc(sizeof(int64_t) * (size_t)(found + 1));
    iou = (double *)malloc(sizeof(double) * (size_t)(found + 1));
    if (!ti || !di || !iou) goto oom;
    for (int64_t k = 0; k < found; ++k) {
        const int64_t i = pairs[2 * k], j = pairs[2 * k + 1];
        if (tl && dl && tl[i] != dl[j]) continue;
        double v;
        if (aabb) {
            const double *a = ta + 4 * i, *b = da + 4 * j;
            const double iw = obb_min(a[2], b[2]) - obb_max(a[0], b[0]);
            const double ih = obb_min(a[3], b[3]) - obb_max(a[1], b[1]);
            const double inter = iw * ih;
            const double area_t = (a[2] - a[0]) * (a[3] - a[1]), area_d = (b[2] - b[0]) * (b[3] - b[1]);
            v = inter / obb_np_max(area_t + area_d - inter, 1e-12);
        } else {
            v = (double)(float)obb_prep_iou(prep + i, prep + nt + j); /* what obb_box_iou computes, float32 out */
        }
        if (!(v > 0.0)) continue;
        ti[count] = i;
        di[count] = j;
        iou[count++] = v;
    }
    free(boxes);
    free(bounds);
    free(prep);
    free(pairs);
    *ti_out = ti;
    *di_out = di;
    *iou_out = iou;
    return count;
oom:
    free(boxes);
    free(bounds);
    free(prep);
    free(pairs);
    free(ti);
    free(di);
    free(iou);
    *ti_out = *di_out = NULL;
    *iou_out = NULL;
    return -1;
}

/* association.candidate_ious for Python: at most `capacity` pairs written; returns how many there are (call again
 * with that capacity when it is larger), -1 when out of memory. Labels NULL: every class with every class. */
OBB_EXPORT int64_t obbmeta_candidate_ious(const double *tracks, const int64_t *track_labels, int64_t nt,
                                          const double *dets, const int64_t *det_labels, int64_t nd, int aabb,
                                          double buffer, int64_t *ti, int64_t *di, double *iou, int64_t capacity)
{
    int64_t *t = NULL, *d = NULL;
    double *v = NULL;
    const int64_t count = obb_candidates(tracks, track_labels, nt, dets, det_labels, nd, aabb, buffer, &t, &d, &v);
    for (int64_t k = 0; k < count && k < capacity; ++k) {
        ti[k] = t[k];
        di[k] = d[k];
        iou[k] = v[k];
    }
    free(t);
    free(d);
    free(v);
    return count;
}

/* One frame of one stream: the tracks `in` (not modified) become `out` (room for in->n + det->n rows; it may not
 * share memory with `in`); `report` gets what the frame reports. New tracks take ids *next_id, *next_id + 1, ...
 * in detection order (*next_id is advanced); `first_frame`: the stream's first detection frame (its new tracks are
 * confirmed at once). `detection_done` 0: a frame without detection (the prediction moves on, nothing counts as
 * a miss; the detections, if any, are reported untracked). Returns 0, or -1 when out of memory (then `out` and
 * `report` are undefined and *next_id is unchanged). */
OBB_EXPORT int64_t obbmeta_track_step(const obb_track_params *p, const obb_tracks *in, const obb_detections *det,
                                      int detection_done, int first_frame, int64_t *next_id, obb_tracks *out,
                                      obb_track_report *report)
{
    const int64_t nt = in->n, nd = det->n;
    for (int64_t i = 0; i < nt; ++i) obb_copy_row(in, i, out, i);
    out->n = nt;
    for (int64_t j = 0; j < nd; ++j) {
        report->det_ids[j] = -1;
        for (int d = 0; d < 5; ++d) report->det_xywhr[5 * j + d] = (float)det->xywhr[5 * j + d];
    }
    obb_predict_tracks(p, out);
    if (!detection_done) {
        obb_report_tracks(p, out, 0, report);
        return 0;
    }
    int64_t *ti = NULL, *di = NULL, *mt = NULL, *md = NULL;
    double *iou = NULL;
    obb_scored_pair *pairs = NULL;
    uint8_t *flags = (uint8_t *)malloc((size_t)(3 * nt + 3 * nd + 1));
    int64_t status = 0;
    double *predicted = (double *)malloc(sizeof(double) * 5 * (size_t)(nt + 1));
    if (predicted)
        for (int64_t i = 0; i < nt; ++i) obb_track_box(out, i, predicted + 5 * i);
    const int64_t k = flags && predicted ? obb_candidates(predicted, p->class_aware ? out->labels : NULL, nt,
                                                          det->xywhr, p->class_aware ? det->labels : NULL, nd,
                                                          (int)p->aabb_association, p->buffer, &ti, &di, &iou)
                                         : -1;
    free(predicted);
    if (k >= 0) {
        mt = (int64_t *)malloc(sizeof(int64_t) * (size_t)(k + 1));
        md = (int64_t *)malloc(sizeof(int64_t) * (size_t)(k + 1));
        pairs = (obb_scored_pair *)malloc(sizeof(obb_scored_pair) * (size_t)(k + 1));
    }
    if (k < 0 || !mt || !md || !pairs) {
        status = -1;
        goto done;
    }
    /* the three stages take pairs in one order (descending IoU, then track, then detection): sorted once */
    for (int64_t q = 0; q < k; ++q) pairs[q] = (obb_scored_pair){iou[q], ti[q], di[q]};
    qsort(pairs, (size_t)k, sizeof(obb_scored_pair), obb_scored_pair_compare);
    uint8_t *track_free = flags, *matched = flags + nt, *was_confirmed = flags + 2 * nt;
    uint8_t *det_free = flags + 3 * nt, *low = flags + 3 * nt + nd, *det_matched = flags + 3 * nt + 2 * nd;
    for (int64_t j = 0; j < nd; ++j) {
        const double s = det->scores[j];
        det_free[j] = s >= p->high_score;
        low[j] = s >= p->low_score && !det_free[j];
        det_matched[j] = 0;
    }
    for (int64_t i = 0; i < nt; ++i) {
        matched[i] = 0;
        was_confirmed[i] = out->confirmed[i];
    }
    int64_t taken = 0, n;
    /* 1: confident detections with confirmed tracks */
    for (int64_t i = 0; i < nt; ++i) track_free[i] = was_confirmed[i];
    n = obb_greedy_scan(pairs, k, p->match_iou, track_free, det_free, mt, md);
    for (int64_t q = 0; q < n; ++q) matched[mt[q]] = 1;
    taken += n;
    /* 2: low-score detections with the confirmed tracks seen on the last detection frame, not matched above */
    for (int64_t i = 0; i < nt; ++i) track_free[i] = was_confirmed[i] && out->lost[i] == 0 && !matched[i];
    n = obb_greedy_scan(pairs, k, p->low_match_iou, track_free, low, mt + taken, md + taken);
    taken += n;
    /* 3: the remaining confident detections with tentative tracks */
    for (int64_t i = 0; i < nt; ++i) track_free[i] = !was_confirmed[i];
    n = obb_greedy_scan(pairs, k, p->tentative_match_iou, track_free, det_free, mt + taken, md + taken);
    taken += n;
    for (int64_t q = 0; q < taken; ++q) {
        const int64_t i = mt[q], j = md[q];
        double z[5], unused_value[5], unused_velocity[5], r[5];
        memcpy(z, det->xywhr + 5 * j, sizeof(z));
        obb_align(z, out->mean[5 * i + 4], (int)p->heading);
        obb_noise(p, obb_np_max(z[2], OBB_MIN_SIDE), obb_np_max(z[3], OBB_MIN_SIDE), unused_value, unused_velocity,
                  r);
        for (int d = 0; d < 5; ++d) {
            const int64_t e = 5 * i + d;
            obb_kf_update(out->mean + e, out->velocity + e, out->p00 + e, out->p01 + e, out->p11 + e, z[d], r[d]);
        }
        out->hits[i] += 1;
        out->lost[i] = 0;
        out->score[i] = (float)det->scores[j];
        out->confirmed[i] = out->confirmed[i] || out->hits[i] >= p->min_hits;
        matched[i] = 1;
        det_matched[j] = 1;
        if (out->confirmed[i]) {
            double b[5];
            obb_track_box(out, i, b);
            report->det_ids[j] = out->ids[i];
            for (int d = 0; d < 5; ++d) report->det_xywhr[5 * j + d] = (float)b[d];
        }
    }
    /* misses, then the tracks that survive (in order), then the new ones (in detection order) */
    int64_t kept = 0;
    for (int64_t i = 0; i < nt; ++i) {
        if (!matched[i]) out->lost[i] += 1;
        if ((matched[i] || out->confirmed[i]) && out->lost[i] <= p->max_age) obb_copy_row(out, i, out, kept++);
    }
    int64_t id = *next_id;
    for (int64_t j = 0; j < nd; ++j) {
        if (!det_free[j] || !(det->scores[j] >= p->new_track_score)) continue;
        const double *z = det->xywhr + 5 * j;
        double unused[5], q_velocity[5], r[5];
        obb_noise(p, z[2], z[3], unused, q_velocity, r);
        const int64_t e = kept;
        for (int d = 0; d < 5; ++d) {
            const double v = 2.0 * r[d], u = 10.0 * q_velocity[d];
            out->mean[5 * e + d] = z[d];
            out->velocity[5 * e + d] = 0.0;
            out->p00[5 * e + d] = v * v;
            out->p01[5 * e + d] = 0.0;
            out->p11[5 * e + d] = u * u;
        }
        const int confirm = first_frame || p->min_hits <= 1;
        out->ids[e] = id;
        out->labels[e] = det->labels[j];
        out->confirmed[e] = (uint8_t)confirm;
        out->hits[e] = 1;
        out->lost[e] = 0;
        out->score[e] = (float)det->scores[j];
        if (confirm) report->det_ids[j] = id;
        ++id;
        ++kept;
    }
    out->n = kept;
    *next_id = id;
    obb_report_tracks(p, out, 1, report);
done:
    free(pairs);
    free(flags);
    free(ti);
    free(di);
    free(iou);
    free(mt);
    free(md);
    return status;
}

/* ---------------------------------------------------------------- one frame of several streams */

typedef struct {
    const obb_track_params *p;
    const obb_tracks *in;
    const obb_detections *det;
    const uint8_t *first_frame;
    obb_tracks *out;
    obb_track_report *report;
    int64_t *next_id; /* per stream: its provisional first id in, the next one out */
    int64_t *status;
    int64_t n_streams, stride, start;
} obb_step_job;

static void *obb_step_worker(void *arg)
{
    const obb_step_job *j = (const obb_step_job *)arg;
    for (int64_t k = j->start; k < j->n_streams; k += j->stride)
        j->status[k] = obbmeta_track_step(j->p, j->in + k, j->det + k, 1, j->first_frame[k], j->next_id + k,
                                          j->out + k, j->report + k);
    return NULL;
}

/* obbmeta_track_step of the detection frames of n_streams distinct streams (in[k], det[k] -> out[k], report[k]), on
 * up to `threads` threads: the same results as calling it stream after stream, new ids included (stream k's new
 * tracks take the ids after stream k - 1's, from *next_id on; *next_id is advanced). Each stream runs with ids
 * from a provisional base of its own (above every id the streams before it could take), and its new ids are
 * shifted down to their place once all are done. Returns 0, or -1 when out of memory (then every out and report is
 * undefined and *next_id unchanged). */
OBB_EXPORT int64_t obbmeta_track_step_many(const obb_track_params *p, int64_t n_streams, const obb_tracks *in,
                                           const obb_detections *det, const uint8_t *first_frame, int64_t threads,
                                           int64_t *next_id, obb_tracks *out, obb_track_report *report)
{
    if (n_streams <= 0) return 0;
    int64_t *ids = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)n_streams);
    int64_t *status = (int64_t *)calloc((size_t)n_streams, sizeof(int64_t));
    if (!ids || !status) {
        free(ids);
        free(status);
        return -1;
    }
    int64_t *base = ids + n_streams;
    int64_t bound = *next_id;
    for (int64_t k = 0; k < n_streams; ++k) {
        base[k] = ids[k] = bound;
        bound += det[k].n; /* at most one new track per detection */
    }
    if (threads > n_streams) threads = n_streams;
    if (threads < 1) threads = 1;
    obb_step_job job = {p, in, det, first_frame, out, report, ids, status, n_streams, threads, 0};
    pthread_t *workers = threads > 1 ? (pthread_t *)malloc(sizeof(pthread_t) * (size_t)(threads - 1)) : NULL;
    obb_step_job *jobs = threads > 1 ? (obb_step_job *)malloc(sizeof(obb_step_job) * (size_t)threads) : NULL;
    int64_t started = 0;
    if (workers && jobs)
        for (int64_t t = 1; t < threads; ++t) {
            jobs[t] = job;
            jobs[t].start = t;
            if (pthread_create(&workers[started], NULL, obb_step_worker, &jobs[t]) != 0) break;
            ++started;
        }
    /* this thread takes stream 0, threads, 2 threads, ... and every stream of a worker that did not start */
    job.stride = started + 1 == threads ? threads : 1;
    if (job.stride == 1) {
        /* some workers did not start: run every stream not owned by a started worker here, in order */
        for (int64_t k = 0; k < n_streams; ++k) {
            const int64_t owner = k % threads;
            if (owner != 0 && owner <= started) continue;
            status[k] = obbmeta_track_step(p, in + k, det + k, 1, first_frame[k], ids + k, out + k, report + k);
        }
    } else {
        obb_step_worker(&job);
    }
    for (int64_t t = 0; t < started; ++t) pthread_join(workers[t], NULL);
    free(workers);
    free(jobs);
    int64_t rc = 0;
    for (int64_t k = 0; k < n_streams; ++k)
        if (status[k] < 0) rc = -1;
    if (rc == 0) {
        int64_t next = *next_id;
        for (int64_t k = 0; k < n_streams; ++k) {
            const int64_t shift = base[k] - next, used = ids[k] - base[k];
            if (shift) {
                for (int64_t i = 0; i < out[k].n; ++i)
                    if (out[k].ids[i] >= base[k]) out[k].ids[i] -= shift;
                for (int64_t j = 0; j < det[k].n; ++j)
                    if (report[k].det_ids[j] >= base[k]) report[k].det_ids[j] -= shift;
                for (int64_t i = 0; i < report[k].n_pred; ++i)
                    if (report[k].pred_ids[i] >= base[k]) report[k].pred_ids[i] -= shift;
            }
            next += used;
        }
        *next_id = next;
    }
    free(ids);
    free(status);
    return rc;
}
