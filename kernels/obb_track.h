/* obbmeta: the structs of the tracker's C step (kernels/track_cpu.c), mirrored by obbmeta/track/_core.py (checked
 * at load through obbmeta_track_abi_table) and used by the fuzz driver (tests/sanitize/fuzz_c.c). */
#ifndef OBBMETA_OBB_TRACK_H
#define OBBMETA_OBB_TRACK_H

#include <stdint.h>

/* The tracker's settings (OrientedTracker's arguments and its MotionNoise). */
typedef struct {
    double match_iou, low_match_iou, tentative_match_iou; /* the three stages' least IoU */
    double high_score, low_score, new_track_score;
    double buffer; /* the matching margin: both sides lengthened by 2 * buffer * sqrt(w * h) */
    double position, velocity, angle, angle_process, angle_velocity; /* MotionNoise */
    int64_t min_hits, max_age, output_lost;
    int64_t aabb_association; /* 0: exact rotated IoU, 1: IoU of the axis-aligned boxes */
    int64_t class_aware, heading;
} obb_track_params;

/* A stream's tracks: n rows of parallel arrays. As an output, every array has room for the input's tracks plus the
 * frame's detections, and n is set. */
typedef struct {
    int64_t *ids, *labels, *hits, *lost;
    uint8_t *confirmed;
    float *score;
    double *mean, *velocity, *p00, *p01, *p11; /* (n, 5) */
    int64_t n;
} obb_tracks;

/* One frame's detections: boxes (n, 5) float64 (finite, w > 0, h > 0), scores float64, class ids. */
typedef struct {
    const double *xywhr, *scores;
    const int64_t *labels;
    int64_t n;
} obb_detections;

/* What a frame reports (TrackStep): per detection its confirmed track (or -1) and box (float32 (n, 5)); the
 * reported tracks without a detection on this frame (room for every output track). */
typedef struct {
    int64_t *det_ids;
    float *det_xywhr;
    int64_t *pred_ids, *pred_labels;
    float *pred_xywhr, *pred_scores;
    int64_t n_pred;
} obb_track_report;

int obbmeta_track_abi_version(void);
int64_t obbmeta_track_step(const obb_track_params *p, const obb_tracks *in, const obb_detections *det,
                           int detection_done, int first_frame, int64_t *next_id, obb_tracks *out,
                           obb_track_report *report);
int64_t obbmeta_track_step_many(const obb_track_params *p, int64_t n_streams, const obb_tracks *in,
                                const obb_detections *det, const uint8_t *first_frame, int64_t threads,
                                int64_t *next_id, obb_tracks *out, obb_track_report *report);
int64_t obbmeta_candidate_ious(const double *tracks, const int64_t *track_labels, int64_t nt, const double *dets,
                               const int64_t *det_labels, int64_t nd, int aabb, double buffer, int64_t *ti,
                               int64_t *di, double *iou, int64_t capacity);

#endif
