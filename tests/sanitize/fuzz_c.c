/* Fuzz driver for every exported C entry point of obbmeta (kernels/geometry_cpu.c, track_cpu.c, draw_cpu.c,
 * nvds_meta.c),
 * built by tests/sanitize/run.sh with AddressSanitizer + UndefinedBehaviorSanitizer and run again under valgrind.
 *
 * Every call respects the C contract the Python layer guarantees (valid pointers, buffer sizes that match the
 * counts, scores without NaN for NMS, thickness in (0, 256] for drawing) and is adversarial in everything else:
 * NaN / inf / huge / tiny / negative values, empty and odd sizes, wrong layouts, foreign frames, frame sizes beyond
 * the uint32 pixel range, labels out of range, batches copied and released while holding our payloads.
 *
 * Usage: fuzz_c SEED ITERATIONS [path/to/libnvds_meta.so]   (without the library only geometry, tracker + drawing run)
 *        fuzz_c --selftest   (commits the undefined cast this driver must catch: proves the sanitizers are on)
 * Exit status 0 when every check passed; any sanitizer report aborts the run with a non-zero status.
 */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvds_meta.h"
#include "obb_track.h"

/* ---- the entry points under test (their definitions are linked in from kernels/) */
int obbmeta_geometry_abi_version(void);
void obbmeta_iou_matrix(const void *a, int64_t n, const void *b, int64_t m, void *out, int is_double);
void obbmeta_iou_aligned(const void *a, const void *b, int64_t n, void *out, int is_double);
int64_t obbmeta_nms(const void *boxes, const void *scores, int is_double, const int64_t *labels, int64_t n,
                    double iou_threshold, int64_t *keep);
int64_t obbmeta_aabb_overlap_pairs(const double *a, int64_t n, const double *b, int64_t m, int64_t *ti, int64_t *di,
                                   int64_t capacity);
int64_t obbmeta_greedy_match(const int64_t *ti, const int64_t *di, const double *iou, int64_t k, double threshold,
                             uint8_t *track_free, uint8_t *det_free, int64_t *mt, int64_t *md);
int obbmeta_draw_abi_version(void);
void obbmeta_draw_outlines(uint8_t *image, int height, int width, int channels, int64_t row_stride,
                           const float *boxes, int64_t n, const uint8_t *colors, double thickness);
void *obbmeta_obb_meta_copy(void *data, void *user_data);
void obbmeta_obb_meta_release(void *data, void *user_data);
int32_t obbmeta_nvds_init(const obbmeta_nvds_api *api);
int32_t obbmeta_nvds_obb_meta_type(void);
int64_t obbmeta_nvds_live_payloads(void);
const char *obbmeta_nvds_obb_meta_descriptor(void);
int obbmeta_nvds_layout_info(int layout, int64_t *out, int n);
int64_t obbmeta_nvds_attach(int layout, void *batch, obbmeta_write_params *p);
int64_t obbmeta_nvds_add_lines(int layout, void *batch, void *frame, const float *seg, int64_t m, const double *rgba,
                               int64_t num_colors, uint32_t width, double fw, double fh, int64_t *n_display);
int64_t obbmeta_nvds_read(int layout, void *const *frames, int64_t n_frames, obbmeta_read_row *rows, int64_t capacity,
                          int64_t *counts);
int64_t obbmeta_nvds_overlay(int layout, void *batch, void *frame, obbmeta_overlay_params *p);
int64_t obbmeta_nvds_update_objects(int layout, void *batch, void *const *frames, const int64_t *offsets,
                                    int64_t n_frames, const double *frame_sizes, obbmeta_update_params *p);
int32_t obbmeta_nvds_init_classifier(const obbmeta_classifier_api *api);
int obbmeta_nvds_classifier_layout_info(int64_t *out, int n);
int64_t obbmeta_nvds_classify(int layout, void *batch, obbmeta_classify_params *p);

#define CHECK(cond, ...)                                                                                       \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);                                             \
            fprintf(stderr, __VA_ARGS__);                                                                      \
            fprintf(stderr, "\n");                                                                             \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

/* ---- deterministic randomness (xorshift64*) */
static uint64_t g_state = 1;
static uint64_t next_u64(void)
{
    g_state ^= g_state >> 12;
    g_state ^= g_state << 25;
    g_state ^= g_state >> 27;
    return g_state * 0x2545F4914F6CDD1Dull;
}
static int64_t rand_int(int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1)); }
static double rand_unit(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }
static int chance(int percent) { return rand_int(0, 99) < percent; }

/* A value from the ordinary range most of the time and from the hostile corners the rest. */
static double hostile(double lo, double hi)
{
    static const double special[] = {0.0, -0.0, 1e-40, -1e-40, 1e-300, 1.0, -1.0, 2147483648.0, 4294967296.0,
                                     4e9, -4e9, 1e12, 1e30, -1e30, 3e38, -3e38, 3.4028234663852886e38, 1e150,
                                     1e300, -1e300, INFINITY, -INFINITY, NAN};
    if (chance(80)) return lo + (hi - lo) * rand_unit();
    return special[rand_int(0, (int64_t)(sizeof special / sizeof special[0]) - 1)];
}

static void fill_boxes_f(float *b, int64_t n, double extent)
{
    for (int64_t i = 0; i < n; ++i) {
        b[5 * i] = (float)hostile(-0.1 * extent, 1.1 * extent);
        b[5 * i + 1] = (float)hostile(-0.1 * extent, 1.1 * extent);
        b[5 * i + 2] = (float)hostile(-2.0, 0.3 * extent);
        b[5 * i + 3] = (float)hostile(-2.0, 0.3 * extent);
        b[5 * i + 4] = (float)hostile(-7.0, 7.0);
    }
}

static void fill_boxes_d(double *b, int64_t n, double extent)
{
    for (int64_t i = 0; i < n; ++i) {
        b[5 * i] = hostile(-0.1 * extent, 1.1 * extent);
        b[5 * i + 1] = hostile(-0.1 * extent, 1.1 * extent);
        b[5 * i + 2] = hostile(-2.0, 0.3 * extent);
        b[5 * i + 3] = hostile(-2.0, 0.3 * extent);
        b[5 * i + 4] = hostile(-7.0, 7.0);
    }
}

/* ---------------------------------------------------------------- geometry */
static void fuzz_geometry(void)
{
    const int is_double = (int)rand_int(0, 1);
    const int64_t n = rand_int(0, 60), m = rand_int(0, 30);
    const double extent = chance(50) ? 100.0 : 1e6;
    void *a = malloc((size_t)(n ? n : 1) * 5 * 8), *b = malloc((size_t)(m ? m : 1) * 5 * 8);
    void *out = malloc((size_t)((n * m) ? n * m : 1) * 8);
    if (is_double) {
        fill_boxes_d((double *)a, n, extent);
        fill_boxes_d((double *)b, m, extent);
    } else {
        fill_boxes_f((float *)a, n, extent);
        fill_boxes_f((float *)b, m, extent);
    }
    obbmeta_iou_matrix(a, n, b, m, out, is_double);
    for (int64_t k = 0; k < n * m; ++k) {
        const double v = is_double ? ((double *)out)[k] : ((float *)out)[k];
        CHECK(v >= 0.0 && v <= 1.0, "IoU %g outside [0, 1]", v);
    }
    const int64_t k = n < m ? n : m;
    obbmeta_iou_aligned(a, b, k, out, is_double);

    /* NMS: scores without NaN (the caller's contract), many ties */
    void *scores = malloc((size_t)(n ? n : 1) * 8);
    int64_t *labels = malloc((size_t)(n ? n : 1) * 8), *keep = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; ++i) {
        const double s = chance(30) ? (double)rand_int(0, 3) : hostile(-1.0, 1.0);
        const double finite_s = isnan(s) ? 0.5 : s;
        if (is_double)
            ((double *)scores)[i] = finite_s;
        else
            ((float *)scores)[i] = (float)finite_s;
        labels[i] = chance(10) ? (int64_t)next_u64() : rand_int(-2, 3);
    }
    const double thr = chance(20) ? (double)rand_int(0, 1) : rand_unit();
    const int64_t kept = obbmeta_nms(a, scores, is_double, chance(50) ? labels : NULL, n, thr, keep);
    CHECK(kept >= (n > 0) && kept <= n, "nms kept %lld of %lld", (long long)kept, (long long)n);
    for (int64_t i = 0; i < kept; ++i) CHECK(keep[i] >= 0 && keep[i] < n, "keep index out of range");
    free(a), free(b), free(out), free(scores), free(labels), free(keep);
}

/* ---------------------------------------------------------------- the tracker's pairs and matching */
static double finite_coordinate(void)
{
    const double v = chance(30) ? (double)rand_int(-3, 3) : hostile(-50.0, 50.0); /* ties and huge values */
    return isfinite(v) ? v : 1e300; /* finite: the caller's contract */
}

static int overlaps(const double *p, const double *q)
{
    return fmin(p[2], q[2]) - fmax(p[0], q[0]) > 0 && fmin(p[3], q[3]) - fmax(p[1], q[1]) > 0;
}

static void fuzz_pairs_and_matching(void)
{
    const int64_t n = rand_int(0, 40), m = rand_int(0, 40);
    double *a = malloc((size_t)(n ? n : 1) * 4 * 8), *b = malloc((size_t)(m ? m : 1) * 4 * 8);
    for (int64_t i = 0; i < 4 * n; ++i) a[i] = finite_coordinate();
    for (int64_t i = 0; i < 4 * m; ++i) b[i] = finite_coordinate();
    int64_t want = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) want += overlaps(a + 4 * i, b + 4 * j);
    const int64_t capacity = chance(50) ? rand_int(0, 8) : want;
    int64_t *ti = malloc((size_t)(want + 1) * 8), *di = malloc((size_t)(want + 1) * 8);
    const int64_t got = obbmeta_aabb_overlap_pairs(a, n, b, m, ti, di, capacity);
    CHECK(got == want, "aabb_overlap_pairs found %lld pairs, brute force %lld", (long long)got, (long long)want);
    const int64_t written = got < capacity ? got : capacity;
    for (int64_t k = 0; k < written; ++k) {
        CHECK(ti[k] >= 0 && ti[k] < n && di[k] >= 0 && di[k] < m, "pair index out of range");
        CHECK(overlaps(a + 4 * ti[k], b + 4 * di[k]), "pair %lld does not overlap", (long long)k);
        CHECK(k == 0 || ti[k - 1] < ti[k] || (ti[k - 1] == ti[k] && di[k - 1] < di[k]), "pairs not row-major");
    }
    /* greedy matching of those pairs, with hostile (non-NaN) scores and masks */
    double *iou = malloc((size_t)(written + 1) * 8);
    for (int64_t k = 0; k < written; ++k) {
        const double v = chance(30) ? (double)rand_int(0, 2) * 0.5 : hostile(-1.0, 2.0);
        iou[k] = isnan(v) ? 0.0 : v;
    }
    uint8_t *tf = malloc((size_t)(n ? n : 1)), *df = malloc((size_t)(m ? m : 1));
    for (int64_t i = 0; i < n; ++i) tf[i] = (uint8_t)(chance(80) ? rand_int(1, 255) : 0);
    for (int64_t j = 0; j < m; ++j) df[j] = (uint8_t)(chance(80) ? rand_int(1, 255) : 0);
    int64_t *mt = malloc((size_t)(written + 1) * 8), *md = malloc((size_t)(written + 1) * 8);
    const double thr = chance(20) ? (double)rand_int(0, 1) : hostile(-1.0, 1.5);
    const int64_t taken = obbmeta_greedy_match(ti, di, iou, written, isnan(thr) ? 0.5 : thr, tf, df, mt, md);
    CHECK(taken >= 0 && taken <= written, "greedy_match took %lld of %lld", (long long)taken, (long long)written);
    for (int64_t k = 0; k < taken; ++k) {
        CHECK(!tf[mt[k]] && !df[md[k]], "a taken pair left its track or detection free");
        for (int64_t q = 0; q < k; ++q) CHECK(mt[q] != mt[k] && md[q] != md[k], "a track or detection taken twice");
    }
    free(a), free(b), free(ti), free(di), free(iou), free(tf), free(df), free(mt), free(md);
}

/* ---------------------------------------------------------------- the tracker's step
 * Several frames of one stream through obbmeta_track_step, the state carried from each output to the next input, with
 * hostile settings (thresholds anywhere in [0, 1], huge and tiny noise, any buffer in [0, 2]) and hostile detections
 * within the contract (finite, w > 0, h > 0: huge, tiny, far away, identical, flipped angles). */
static double positive_side(void)
{
    const double v = chance(20) ? (chance(50) ? 1e-300 : 1e15) : fabs(hostile(1.0, 80.0));
    return isfinite(v) && v > 0 ? v : 3.0;
}

static void alloc_tracks(obb_tracks *t, int64_t cap)
{
    const size_t c = (size_t)(cap ? cap : 1);
    t->ids = malloc(c * 8), t->labels = malloc(c * 8), t->hits = malloc(c * 8), t->lost = malloc(c * 8);
    t->confirmed = malloc(c), t->score = malloc(c * 4);
    t->mean = malloc(c * 40), t->velocity = malloc(c * 40), t->p00 = malloc(c * 40), t->p01 = malloc(c * 40);
    t->p11 = malloc(c * 40);
    t->n = 0;
}

static void free_tracks(obb_tracks *t)
{
    free(t->ids), free(t->labels), free(t->hits), free(t->lost), free(t->confirmed), free(t->score);
    free(t->mean), free(t->velocity), free(t->p00), free(t->p01), free(t->p11);
}

static void fuzz_track_step(void)
{
    obb_track_params p;
    double unit[6];
    for (int k = 0; k < 6; ++k) unit[k] = chance(20) ? (double)rand_int(0, 1) : rand_unit();
    p.match_iou = unit[0], p.low_match_iou = unit[1], p.tentative_match_iou = unit[2];
    p.low_score = fmin(unit[3], unit[4]), p.high_score = fmax(unit[3], unit[4]);
    p.new_track_score = fmax(p.high_score, unit[5]);
    p.buffer = chance(30) ? 0.0 : 2.0 * rand_unit();
    double *noise[5] = {&p.position, &p.velocity, &p.angle, &p.angle_process, &p.angle_velocity};
    for (int k = 0; k < 5; ++k) *noise[k] = chance(10) ? (chance(50) ? 1e-300 : 1e150) : rand_unit() + 1e-6;
    p.min_hits = rand_int(1, 4), p.max_age = rand_int(0, 5), p.output_lost = rand_int(0, 6);
    p.aabb_association = chance(30), p.class_aware = chance(70), p.heading = chance(30);
    obb_tracks in;
    alloc_tracks(&in, 0);
    int64_t next_id = 1;
    const int frames = (int)rand_int(1, 8);
    for (int f = 0; f < frames; ++f) {
        const int64_t d = rand_int(0, 30);
        double *x = malloc((size_t)(d + 1) * 40), *s = malloc((size_t)(d + 1) * 8);
        int64_t *lab = malloc((size_t)(d + 1) * 8);
        for (int64_t j = 0; j < d; ++j) {
            const double extent = chance(10) ? 1e14 : 300.0;
            x[5 * j] = chance(20) && j ? x[5 * (j - 1)] : extent * rand_unit();
            x[5 * j + 1] = extent * rand_unit();
            x[5 * j + 2] = positive_side(), x[5 * j + 3] = positive_side();
            x[5 * j + 4] = chance(10) ? 1e6 * (rand_unit() - 0.5) : 7.0 * (rand_unit() - 0.5);
            s[j] = chance(20) ? (double)rand_int(0, 1) : rand_unit();
            lab[j] = rand_int(-2, 3);
        }
        obb_detections det = {x, s, lab, d};
        obb_tracks out;
        alloc_tracks(&out, in.n + d);
        const int64_t cap = in.n + d;
        obb_track_report r;
        r.det_ids = malloc((size_t)(d + 1) * 8), r.det_xywhr = malloc((size_t)(d + 1) * 20);
        r.pred_ids = malloc((size_t)(cap + 1) * 8), r.pred_labels = malloc((size_t)(cap + 1) * 8);
        r.pred_xywhr = malloc((size_t)(cap + 1) * 20), r.pred_scores = malloc((size_t)(cap + 1) * 4);
        const int detection = !chance(20);
        const int64_t before = next_id;
        const int64_t rc = obbmeta_track_step(&p, &in, &det, detection, f == 0, &next_id, &out, &r);
        CHECK(rc == 0, "track_step returned %lld", (long long)rc);
        CHECK(out.n >= 0 && out.n <= cap && r.n_pred >= 0 && r.n_pred <= out.n, "track_step sizes %lld %lld of %lld",
              (long long)out.n, (long long)r.n_pred, (long long)cap);
        CHECK(next_id >= before && next_id - before <= d, "track_step gave %lld ids", (long long)(next_id - before));
        for (int64_t i = 0; i < out.n; ++i) {
            CHECK(out.ids[i] >= 1 && out.ids[i] < next_id && (i == 0 || out.ids[i] != out.ids[i - 1]),
                  "track id %lld", (long long)out.ids[i]);
            CHECK(out.confirmed[i] <= 1 && out.lost[i] >= 0 && out.hits[i] >= 1, "track state");
        }
        for (int64_t j = 0; j < d; ++j) CHECK(r.det_ids[j] == -1 || (r.det_ids[j] >= 1 && r.det_ids[j] < next_id),
                                             "detection's track %lld", (long long)r.det_ids[j]);
        free(x), free(s), free(lab);
        free(r.det_ids), free(r.det_xywhr), free(r.pred_ids), free(r.pred_labels), free(r.pred_xywhr);
        free(r.pred_scores);
        free_tracks(&in);
        in = out;
    }
    free_tracks(&in);
}

/* ---------------------------------------------------------------- drawing */
static void fuzz_draw(void)
{
    const int height = (int)rand_int(1, 48), width = (int)rand_int(1, 48), channels = (int)rand_int(3, 4);
    const int64_t stride = (int64_t)width * channels + rand_int(0, 9);
    uint8_t *image = malloc((size_t)(stride * height));
    memset(image, 0, (size_t)(stride * height));
    const int64_t n = rand_int(0, 12);
    float *boxes = malloc((size_t)(n ? n : 1) * 5 * sizeof(float));
    uint8_t *colors = malloc((size_t)(n ? n : 1) * (size_t)channels);
    fill_boxes_f(boxes, n, 64.0);
    for (int64_t i = 0; i < n * channels; ++i) colors[i] = (uint8_t)rand_int(0, 255);
    const double thickness = chance(10) ? 256.0 : 1e-3 + rand_unit() * (chance(50) ? 4.0 : 255.0);
    obbmeta_draw_outlines(image, height, width, channels, stride, boxes, n, colors, thickness);
    free(image), free(boxes), free(colors);
}

/* ---------------------------------------------------------------- DeepStream metadata */
typedef void *(*create_batch_fn)(unsigned);
typedef void *(*acquire_fn)(void *);
typedef void (*add2_fn)(void *, void *);
typedef void *(*copy_fn)(void *, void *);
typedef void (*release_fn)(void *, void *);

static struct {
    create_batch_fn create_batch;
    acquire_fn acquire_frame;
    add2_fn add_frame;
    copy_fn batch_copy;
    release_fn batch_release;
} nv;

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    CHECK(p, "missing symbol %s: %s", name, dlerror());
    return p;
}

static int load_nvds(const char *path)
{
    void *meta = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(meta, "dlopen %s: %s", path, dlerror());
    void *glib = dlopen("libglib-2.0.so.0", RTLD_NOW | RTLD_LOCAL);
    CHECK(glib, "dlopen glib: %s", dlerror());
    obbmeta_nvds_api api;
    api.acquire_obj_meta = sym(meta, "nvds_acquire_obj_meta_from_pool");
    api.add_obj_meta_to_frame = sym(meta, "nvds_add_obj_meta_to_frame");
    api.acquire_user_meta = sym(meta, "nvds_acquire_user_meta_from_pool");
    api.add_user_meta_to_obj = sym(meta, "nvds_add_user_meta_to_obj");
    api.acquire_meta_lock = sym(meta, "nvds_acquire_meta_lock");
    api.release_meta_lock = sym(meta, "nvds_release_meta_lock");
    api.get_user_meta_type = sym(meta, "nvds_get_user_meta_type");
    api.g_malloc = sym(glib, "g_malloc");
    api.g_free = sym(glib, "g_free");
    api.acquire_display_meta = sym(meta, "nvds_acquire_display_meta_from_pool");
    api.add_display_meta_to_frame = sym(meta, "nvds_add_display_meta_to_frame");
    api.remove_display_meta_from_frame = sym(meta, "nvds_remove_display_meta_from_frame");
    api.remove_obj_meta_from_frame = sym(meta, "nvds_remove_obj_meta_from_frame");
    nv.create_batch = (create_batch_fn)sym(meta, "nvds_create_batch_meta");
    nv.acquire_frame = (acquire_fn)sym(meta, "nvds_acquire_frame_meta_from_pool");
    nv.add_frame = (add2_fn)sym(meta, "nvds_add_frame_meta_to_batch");
    nv.batch_copy = (copy_fn)sym(meta, "nvds_batch_meta_copy_func");
    nv.batch_release = (release_fn)sym(meta, "nvds_batch_meta_release_func");
    obbmeta_nvds_api empty;
    memset(&empty, 0, sizeof empty);
    CHECK(obbmeta_nvds_attach(OBBMETA_LAYOUT_DS9, NULL, NULL) == -1, "attach before init must say not ready");
    CHECK(obbmeta_nvds_init(&empty) == -6, "init with an empty table must be refused");
    CHECK(obbmeta_nvds_init(NULL) == -6, "init with NULL must be refused");
    const int32_t type = obbmeta_nvds_init(&api);
    obbmeta_classifier_api cls, cls_empty;
    memset(&cls_empty, 0, sizeof cls_empty);
    CHECK(obbmeta_nvds_classify(OBBMETA_LAYOUT_DS9, NULL, NULL) == -1, "classify before its init: not ready");
    CHECK(obbmeta_nvds_init_classifier(&cls_empty) == -6 && obbmeta_nvds_init_classifier(NULL) == -6,
          "classifier init with an empty table / NULL must be refused");
    cls.acquire_classifier_meta = sym(meta, "nvds_acquire_classifier_meta_from_pool");
    cls.add_classifier_meta_to_object = sym(meta, "nvds_add_classifier_meta_to_object");
    cls.acquire_label_info = sym(meta, "nvds_acquire_label_info_meta_from_pool");
    cls.add_label_info_to_classifier = sym(meta, "nvds_add_label_info_meta_to_classifier");
    CHECK(obbmeta_nvds_init_classifier(&cls) == 0, "classifier init");
    CHECK(type > 8192, "user meta type %d", type);
    CHECK(obbmeta_nvds_obb_meta_type() == type, "meta type getter");
    CHECK(strcmp(obbmeta_nvds_obb_meta_descriptor(), OBBMETA_USER_META_DESCRIPTOR) == 0, "descriptor");
    /* which layout this library has: the object pool's element size */
    void *probe = nv.create_batch(1);
    const uint32_t obj_size = ((obbmeta_batch_meta_head *)probe)->obj_meta_pool->element_size;
    nv.batch_release(probe, NULL);
    return obj_size == sizeof(obbmeta_object_meta_ds9) ? OBBMETA_LAYOUT_DS9 : OBBMETA_LAYOUT_DS6_8;
}

/* A batch set up as nvstreammux (and BatchMeta.create) sets it up, with `frames` frames. */
static void *make_batch(unsigned max_frames, unsigned frames, void **frame_out)
{
    void *batch = nv.create_batch(max_frames);
    obbmeta_batch_meta_head *h = (obbmeta_batch_meta_head *)batch;
    h->base.batch_meta = batch;
    h->base.copy_func = nv.batch_copy;
    h->base.release_func = nv.batch_release;
    h->max_frames_in_batch = max_frames;
    for (unsigned k = 0; k < frames; ++k) {
        obbmeta_frame_meta_head *f = (obbmeta_frame_meta_head *)nv.acquire_frame(batch);
        f->source_id = f->pad_index = k;
        f->batch_id = k;
        f->num_surfaces_per_frame = 1;
        const uint32_t w = chance(10) ? 0u : (chance(10) ? 4294967295u : (uint32_t)rand_int(1, 4000));
        const uint32_t hh = chance(10) ? 0u : (uint32_t)rand_int(1, 3000);
        f->source_frame_width = f->pipeline_width = w;
        f->source_frame_height = f->pipeline_height = hh;
        nv.add_frame(batch, f);
        frame_out[k] = f;
    }
    return batch;
}

static double frame_side(void)
{
    static const double odd[] = {0.0, -5.0, NAN, INFINITY, 1e12, 1e10, 4294967296.0, 4294967297.0, 1e-9, 1.0};
    return chance(70) ? 1.0 + rand_unit() * 3999.0 : odd[rand_int(0, 9)];
}

/* The extent to draw coordinates from for a frame side: the side itself when usable (so that huge frames get
 * huge, in-frame coordinates), else an ordinary frame. */
static double extent_for(double side) { return side > 1.0 && side < 1e13 ? side : 4000.0; }

static int random_layout(int layout)
{
    static const int others[] = {0, OBBMETA_LAYOUT_DS6_8, OBBMETA_LAYOUT_DS9, 3, -1};
    return chance(90) ? layout : others[rand_int(0, 4)];
}

static int64_t count_objects(void *frame)
{
    int64_t n = 0;
    for (obbmeta_glist *l = ((obbmeta_frame_meta_head *)frame)->obj_meta_list; l; l = l->next) ++n;
    return n;
}

/* The attach's addresses: 0 exactly where nothing was written, and each frame's new objects (the ones NVIDIA's add
 * function prepended, newest first) are the nonzero addresses of that frame's boxes, in input order. */
static void check_addresses(const obbmeta_write_params *p, int64_t n, int64_t written)
{
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (p->written_mask) CHECK((p->addresses[i] != 0) == (p->written_mask[i] == 1), "address %lld", (long long)i);
        nonzero += p->addresses[i] != 0;
    }
    CHECK(nonzero == written, "%lld addresses for %lld objects", (long long)nonzero, (long long)written);
    const int64_t frames = p->frames ? p->num_frames : 1;
    for (int64_t f = 0; f < frames; ++f) {
        void *frame = p->frames ? p->frames[f] : p->frame;
        const int64_t begin = p->frames ? p->offsets[f] : 0, end = p->frames ? p->offsets[f + 1] : n;
        const obbmeta_glist *l = ((obbmeta_frame_meta_head *)frame)->obj_meta_list;
        for (int64_t i = end - 1; i >= begin; --i) {
            if (!p->addresses[i]) continue;
            CHECK(l && (uint64_t)(uintptr_t)l->data == p->addresses[i], "address %lld is not its frame's object",
                  (long long)i);
            const obbmeta_object_head *o = (const obbmeta_object_head *)l->data;
            CHECK(o->unique_component_id == (p->component_ids ? p->component_ids[i] : p->component_id), "component");
            if (p->flags & OBBMETA_WRITE_NO_DETECTOR_BBOX)
                CHECK(o->detector_bbox.left == 0.0f && o->detector_bbox.top == 0.0f &&
                          o->detector_bbox.width == 0.0f && o->detector_bbox.height == 0.0f,
                      "detector_bbox_info of entry %lld", (long long)i);
            l = l->next;
        }
    }
}

static void fuzz_attach(int layout, void *batch, void **frames, unsigned nf, void *foreign)
{
    const int64_t n = rand_int(0, 40);
    float *x = malloc((size_t)(n ? n : 1) * 5 * sizeof(float));
    float *s = malloc((size_t)(n ? n : 1) * sizeof(float));
    int64_t *lab = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    uint8_t *mask = malloc((size_t)(n ? n : 1));
    uint64_t *addresses = malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    int32_t *components = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    for (int64_t i = 0; i < n; ++i) components[i] = (int32_t)next_u64();
    const double side_w = frame_side(), side_h = frame_side();
    fill_boxes_f(x, n, extent_for(fmax(side_w, side_h)));
    const int64_t num_labels = rand_int(0, 6);
    char names[6][300];
    const char *table[6];
    for (int64_t k = 0; k < num_labels; ++k) {
        const int64_t len = chance(20) ? rand_int(120, 299) : rand_int(0, 20);
        for (int64_t c = 0; c < len; ++c) names[k][c] = (char)rand_int(1, 255);
        names[k][len] = '\0';
        table[k] = names[k];
    }
    for (int64_t i = 0; i < n; ++i) {
        s[i] = (float)hostile(0.0, 1.0);
        lab[i] = chance(5) ? (int64_t)next_u64() : rand_int(-1, num_labels ? num_labels : 5);
    }
    double palette[5 * 4];
    for (int k = 0; k < 20; ++k) palette[k] = rand_unit();
    obbmeta_write_params p;
    memset(&p, 0, sizeof p);
    p.xywhr = x;
    p.scores = s;
    p.labels = lab;
    p.n = n;
    p.label_text = chance(50) && num_labels ? table : NULL;
    p.num_labels = p.label_text ? num_labels : 0;
    p.palette = palette;
    p.num_colors = rand_int(chance(5) ? 0 : 1, 5);
    p.component_id = (int32_t)rand_int(-3, 1000);
    p.border_width = (uint32_t)next_u64();
    p.flags = (int32_t)rand_int(0, 31);
    p.component_ids = chance(30) ? components : NULL;
    p.written_mask = chance(80) ? mask : NULL;
    p.addresses = chance(80) ? addresses : NULL;
    void *use[8];
    int64_t offsets[9];
    double sizes[16];
    if (chance(40) && nf > 0) { /* batch form: boxes split over the frames (maybe with a foreign one) */
        offsets[0] = 0;
        for (unsigned f = 0; f < nf; ++f) {
            use[f] = chance(5) ? foreign : frames[f];
            offsets[f + 1] = f + 1 == nf ? n : rand_int(offsets[f], n);
            sizes[2 * f] = chance(50) ? side_w : frame_side();
            sizes[2 * f + 1] = chance(50) ? side_h : frame_side();
        }
        p.frames = use;
        p.offsets = offsets;
        p.frame_sizes = sizes;
        p.num_frames = nf;
    } else {
        p.frame = nf && chance(95) ? frames[rand_int(0, nf - 1)] : foreign;
        p.frame_width = side_w;
        p.frame_height = side_h;
    }
    const int64_t before = p.frames ? 0 : count_objects(p.frame);
    const int32_t infer_done = p.frames ? 0 : ((obbmeta_frame_meta_head *)p.frame)->infer_done;
    const int64_t written = obbmeta_nvds_attach(random_layout(layout), batch, &p);
    if (written >= 0) {
        CHECK(written + p.n_filtered == n, "written %lld + filtered %lld != %lld", (long long)written,
              (long long)p.n_filtered, (long long)n);
        if (!p.frames) {
            CHECK(count_objects(p.frame) == before + written, "objects in the frame");
            CHECK(((obbmeta_frame_meta_head *)p.frame)->infer_done ==
                      ((p.flags & OBBMETA_WRITE_KEEP_INFER_DONE) ? infer_done : 1),
                  "bInferDone");
        }
        if (p.addresses) check_addresses(&p, n, written);
    } else {
        CHECK(written >= -7, "unknown error code %lld", (long long)written);
        if (!p.frames) CHECK(count_objects(p.frame) == before, "an error left objects behind");
    }
    free(x), free(s), free(lab), free(mask), free(addresses), free(components);
}

static void add_plain_objects(int layout, void *batch, void *frame);

/* Tracks and their objects, for update_objects: up to 16 entries naming objects of `frame` (some of another frame,
 * some twice, some no object at all), with hostile values for every field. */
static void fuzz_update(int layout, void *batch, void *frame, void *foreign)
{
    void *own = ((obbmeta_base_meta *)frame)->batch_meta;
    if (chance(50)) add_plain_objects(layout, own, frame);
    uint64_t objs[20];
    int64_t n = 0;
    for (obbmeta_glist *l = ((obbmeta_frame_meta_head *)frame)->obj_meta_list; l && n < 16; l = l->next)
        if (chance(70)) objs[n++] = (uint64_t)(uintptr_t)l->data;
    if (chance(5) && ((obbmeta_frame_meta_head *)foreign)->obj_meta_list)
        objs[n++] = (uint64_t)(uintptr_t)((obbmeta_frame_meta_head *)foreign)->obj_meta_list->data;
    if (chance(3)) objs[n++] = 0x1000u + 8u * (uint64_t)rand_int(0, 100); /* no object: found in no list */
    if (chance(5) && n > 0) objs[n++] = objs[0];                           /* listed twice */
    float x[20 * 5], conf[20], trk[20], rot[20];
    uint32_t flags[20];
    uint64_t ids[20];
    fill_boxes_f(x, n, 2000.0);
    for (int64_t i = 0; i < n; ++i) {
        conf[i] = (float)hostile(0.0, 1.0);
        trk[i] = (float)hostile(0.0, 1.0);
        rot[i] = chance(30) ? NAN : (float)hostile(-360.0, 360.0);
        flags[i] = (uint32_t)next_u64();
        ids[i] = next_u64();
    }
    obbmeta_update_params p;
    memset(&p, 0, sizeof p);
    p.objects = objs;
    p.xywhr = chance(98) ? x : NULL;
    p.obb_flags = chance(98) ? flags : NULL;
    p.object_ids = chance(98) ? ids : NULL;
    p.confidence = chance(98) ? conf : NULL;
    p.tracker_confidence = chance(98) ? trk : NULL;
    p.rotation_angle = chance(98) ? rot : NULL;
    p.n = chance(98) ? n : -1;
    p.flags = (int32_t)rand_int(0, 63);
    const double sizes[2] = {frame_side(), frame_side()};
    /* one frame, its entries [0, n) (sometimes a hostile split or end) */
    void *frames[1] = {frame};
    const int64_t offsets[2] = {chance(98) ? 0 : 1, chance(98) ? n : n + 1};
    const int used = random_layout(layout);
    const int64_t objects = count_objects(frame);
    const int64_t rc = obbmeta_nvds_update_objects(used, chance(98) ? own : batch, chance(99) ? frames : NULL, offsets,
                                                   chance(98) ? 1 : 0, chance(98) ? sizes : NULL,
                                                   chance(99) ? &p : NULL);
    CHECK(rc == 0 || (rc >= -7 && rc < 0), "update_objects returned %lld", (long long)rc);
    CHECK(count_objects(frame) == objects, "update_objects changed the object list");
    if (rc == 0 && used == OBBMETA_LAYOUT_DS9 && (p.flags & OBBMETA_UPDATE_ROTATION))
        for (int64_t i = 0; i < n; ++i) {
            const float got = ((const obbmeta_object_meta_ds9 *)(uintptr_t)objs[i])->rect_params.rotation_angle;
            CHECK(isnan(rot[i]) || got == rot[i], "rotation_angle of entry %lld", (long long)i);
        }
}

static void fuzz_lines(int layout, void *batch, void *frame)
{
    const int64_t m = rand_int(0, 50);
    const double fw = frame_side(), fh = frame_side(), ext = extent_for(fmax(fw, fh));
    float *seg = malloc((size_t)(m ? m : 1) * 4 * sizeof(float));
    for (int64_t i = 0; i < 4 * m; ++i) seg[i] = (float)hostile(-0.1 * ext, 1.1 * ext);
    const int64_t colors = chance(50) ? 1 : m;
    double *rgba = malloc((size_t)(colors ? colors : 1) * 4 * sizeof(double));
    for (int64_t i = 0; i < 4 * colors; ++i) rgba[i] = rand_unit();
    int64_t n_display = 0;
    const int64_t r = obbmeta_nvds_add_lines(random_layout(layout), batch, frame, m ? seg : NULL, m, m ? rgba : NULL,
                                             colors, (uint32_t)next_u64(), fw, fh, chance(98) ? &n_display : NULL);
    CHECK(r >= -7 && r <= m, "add_lines returned %lld for %lld segments", (long long)r, (long long)m);
    free(seg), free(rgba);
}

static void fuzz_overlay(int layout, void *batch, void *frame)
{
    double palette[3 * 4];
    for (int k = 0; k < 12; ++k) palette[k] = rand_unit();
    obbmeta_overlay_params p;
    memset(&p, 0, sizeof p);
    p.palette = chance(98) ? palette : NULL;
    p.num_colors = rand_int(chance(3) ? -1 : 1, 3);
    p.line_width = (uint32_t)next_u64();
    p.flags = (int32_t)rand_int(0, 15);
    p.frame_width = frame_side();
    p.frame_height = frame_side();
    const int64_t r = obbmeta_nvds_overlay(random_layout(layout), batch, frame, chance(99) ? &p : NULL);
    if (r == 0) CHECK(p.objects == p.drawn + p.skipped + p.outside, "overlay counts do not add up");
}

static void fuzz_read(int layout, void *frame)
{
    const int64_t objects = count_objects(frame);
    const int64_t capacity = rand_int(0, objects + 2);
    obbmeta_read_row *rows = malloc((size_t)(capacity ? capacity : 1) * sizeof(obbmeta_read_row));
    void *frames[2] = {frame, frame};
    int64_t counts[2] = {-1, -1};
    const int64_t n_frames = rand_int(1, 2);  /* one frame, or the same frame twice */
    if (chance(1)) frames[n_frames - 1] = NULL;
    const int64_t got = obbmeta_nvds_read(random_layout(layout), frames, n_frames, rows, capacity, counts);
    CHECK(got < 0 || got == n_frames * objects, "read counted %lld of %lld objects", (long long)got,
          (long long)(n_frames * objects));
    for (int64_t k = 0; got >= 0 && k < n_frames; ++k)
        CHECK(counts[k] == objects, "frame %lld counted %lld of %lld objects", (long long)k, (long long)counts[k],
              (long long)objects);
    for (int64_t i = 0; i < (got < capacity ? got : capacity); ++i)
        CHECK(rows[i].label[OBBMETA_MAX_LABEL - 1] == '\0' && rows[i].source >= 0 && rows[i].source <= 3, "row %lld",
              (long long)i);
    free(rows);
}

static int64_t count_classifier_metas(int layout, void *frame)
{
    int64_t n = 0;
    for (obbmeta_glist *l = ((obbmeta_frame_meta_head *)frame)->obj_meta_list; l; l = l->next) {
        obbmeta_glist *c = layout == OBBMETA_LAYOUT_DS9 ? ((obbmeta_object_meta_ds9 *)l->data)->classifier_meta_list
                                                         : ((obbmeta_object_meta_ds6_8 *)l->data)->classifier_meta_list;
        for (; c; c = c->next) ++n;
    }
    return n;
}

/* The cut the Python layer computes: the whole label when it fits 127 bytes, else the last position <= 127 that is
 * not inside a UTF-8 character (random bytes may have none within reach: then any cut, which must be refused). */
static int32_t proper_cut(const unsigned char *text, int64_t len)
{
    if (len <= 127) return (int32_t)len;
    int32_t k = 127;
    while (k > 123 && (text[k] & 0xC0u) == 0x80u) --k;
    return k;
}

/* A few well-formed objects in `frame` (hostile boxes leave most frames empty; the classifier needs objects). */
static void add_plain_objects(int layout, void *batch, void *frame)
{
    const float boxes[3 * 5] = {100, 100, 40, 20, 0.5f, 300, 200, 10, 60, -1.0f, 50, 400, 30, 30, 0.0f};
    const float scores[3] = {0.9f, 0.5f, 0.1f};
    const int64_t labels[3] = {0, 1, 2};
    const double palette[4] = {1, 0, 0, 1};
    const int32_t components[3] = {(int32_t)next_u64(), 7, (int32_t)next_u64()};
    uint64_t addresses[3];
    obbmeta_write_params p;
    memset(&p, 0, sizeof p);
    p.xywhr = boxes;
    p.scores = scores;
    p.labels = labels;
    p.n = rand_int(1, 3);
    p.palette = palette;
    p.num_colors = 1;
    /* sometimes as a tracker writes its own objects: bInferDone kept, no detector box, one component id each */
    p.flags = OBBMETA_WRITE_TEXT | (chance(30) ? OBBMETA_WRITE_KEEP_INFER_DONE | OBBMETA_WRITE_NO_DETECTOR_BBOX : 0);
    p.component_ids = chance(30) ? components : NULL;
    p.addresses = addresses;
    p.frame = frame;
    p.frame_width = p.frame_height = 1000.0;
    CHECK(obbmeta_nvds_attach(layout, batch, &p) == p.n, "plain objects");
    check_addresses(&p, p.n, p.n);
}

static void fuzz_classify(int layout, void *batch, void **frames, unsigned nf, void *foreign)
{
    uint64_t objs[20];
    int64_t n = 0;
    for (unsigned f = 0; f < nf; ++f)
        if (chance(50)) add_plain_objects(layout, batch, frames[f]);
    if (chance(20)) add_plain_objects(layout, ((obbmeta_base_meta *)foreign)->batch_meta, foreign);
    for (unsigned f = 0; f < nf; ++f)
        for (obbmeta_glist *l = ((obbmeta_frame_meta_head *)frames[f])->obj_meta_list; l && n < 16; l = l->next)
            if (chance(60)) objs[n++] = (uint64_t)(uintptr_t)l->data;
    if (chance(5) && ((obbmeta_frame_meta_head *)foreign)->obj_meta_list)
        objs[n++] = (uint64_t)(uintptr_t)((obbmeta_frame_meta_head *)foreign)->obj_meta_list->data;
    if (chance(5) && n > 0) objs[n++] = objs[0]; /* listed twice */
    int64_t offsets[21], total = 0;
    offsets[0] = 0;
    for (int64_t i = 0; i < n; ++i) offsets[i + 1] = total += rand_int(0, 3);
    const int64_t m = total;
    uint32_t *ids = malloc((size_t)(m ? m : 1) * 3 * sizeof(uint32_t));
    float *probs = malloc((size_t)(m ? m : 1) * sizeof(float));
    int64_t *start = malloc((size_t)(m ? m : 1) * 2 * sizeof(int64_t));
    int32_t *cut = malloc((size_t)(m ? m : 1) * sizeof(int32_t));
    unsigned char *text = malloc((size_t)(m ? m : 1) * 300 + 1);
    int64_t used = 0;
    for (int64_t k = 0; k < m; ++k) {
        const int64_t len = chance(30) ? rand_int(120, 299) : rand_int(0, 20);
        for (int64_t c = 0; c < len; ++c) text[used + c] = (unsigned char)rand_int(1, 255);
        if (len && chance(3)) text[used + rand_int(0, len - 1)] = 0; /* a NUL inside: refused */
        ids[k] = (uint32_t)next_u64();
        ids[m + k] = (uint32_t)next_u64();
        ids[2 * m + k] = (uint32_t)rand_int(0, 9);
        probs[k] = chance(95) ? (float)rand_unit() : (float)hostile(-1.0, 2.0);
        start[k] = used;
        start[m + k] = len;
        cut[k] = chance(95) ? proper_cut(text + used, len) : (int32_t)rand_int(-2, 130);
        used += len;
    }
    text[used] = 0;
    obbmeta_classify_params p;
    memset(&p, 0, sizeof p);
    p.objects = n ? objs : NULL;
    p.n = n;
    p.label_offsets = offsets;
    p.label_ids = ids;
    p.class_ids = ids + m;
    p.num_classes = ids + 2 * m;
    p.probs = probs;
    p.text = (const char *)text;
    p.text_start = start;
    p.text_len = start + m;
    p.cut_len = cut;
    p.num_labels = m;
    if (chance(3) && n > 1) offsets[1] = offsets[n] + 1; /* offsets that go backwards */
    p.component_id = (int32_t)next_u64();
    p.classifier_type = chance(50) ? "fuzz" : NULL;
    p.flags = (int32_t)rand_int(0, 1);
    int64_t before = 0;
    for (unsigned f = 0; f < nf; ++f) before += count_classifier_metas(layout, frames[f]);
    const int64_t rc = obbmeta_nvds_classify(random_layout(layout), chance(98) ? batch : foreign, chance(99) ? &p : NULL);
    int64_t after = 0;
    for (unsigned f = 0; f < nf; ++f) after += count_classifier_metas(layout, frames[f]);
    if (rc >= 0) {
        CHECK(rc == p.classifier_metas && after == before + rc && p.labels == m, "classify wrote %lld metas, %lld "
              "labels of %lld", (long long)rc, (long long)p.labels, (long long)m);
    } else {
        CHECK(rc >= -7 && after == before, "classify error %lld left classifier metas behind", (long long)rc);
    }
    free(ids), free(probs), free(start), free(cut), free(text);
}

static void fuzz_payload_functions(void *frame)
{
    CHECK(obbmeta_obb_meta_copy(NULL, NULL) == NULL, "copy of NULL");
    obbmeta_obb_meta_release(NULL, NULL);
    for (obbmeta_glist *l = ((obbmeta_frame_meta_head *)frame)->obj_meta_list; l; l = l->next) {
        const obbmeta_object_meta_ds9 *o = (const obbmeta_object_meta_ds9 *)l->data;
        for (obbmeta_glist *u = o->obj_user_meta_list; u; u = u->next) {
            obbmeta_user_meta *um = (obbmeta_user_meta *)u->data;
            if (um->base.copy_func != obbmeta_obb_meta_copy) continue;
            /* a copy into a scratch user meta, released again: what tee / nvtracker do */
            obbmeta_user_meta scratch = *um;
            scratch.user_meta_data = obbmeta_obb_meta_copy(um, NULL);
            CHECK(scratch.user_meta_data && memcmp(scratch.user_meta_data, um->user_meta_data, 64) == 0, "copy");
            obbmeta_obb_meta_release(&scratch, NULL);
            CHECK(scratch.user_meta_data == NULL && scratch.base.release_func == NULL, "release clears");
            return;
        }
    }
}

static void fuzz_nvds_round(int layout)
{
    const unsigned nf = (unsigned)rand_int(0, 3);
    void *frames[4], *other_frames[1];
    void *batch = make_batch(nf ? nf : 1, nf, frames);
    void *other = make_batch(1, 1, other_frames);
    const int ops = (int)rand_int(1, 10);
    for (int k = 0; k < ops; ++k) {
        void *frame = nf && chance(95) ? frames[rand_int(0, nf - 1)] : other_frames[0];
        switch (rand_int(0, 8)) {
        case 0:
        case 1: fuzz_attach(layout, batch, frames, nf, other_frames[0]); break;
        case 2: fuzz_lines(layout, batch, frame); break;
        case 3: fuzz_overlay(layout, batch, frame); break;
        case 4: fuzz_read(layout, frame); break;
        case 5: fuzz_payload_functions(frame); break;
        case 6: { /* NVIDIA's deep copy (it calls our copy function), used, then released */
            void *copy = nv.batch_copy(batch, NULL);
            for (obbmeta_glist *l = ((obbmeta_batch_meta_head *)copy)->frame_meta_list; l; l = l->next) {
                fuzz_read(layout, l->data);
                fuzz_overlay(layout, copy, l->data);
            }
            nv.batch_release(copy, NULL);
            break;
        }
        case 7: fuzz_classify(layout, batch, frames, nf, other_frames[0]); break;
        case 8: fuzz_update(layout, batch, frame, other_frames[0]); break;
        }
    }
    int64_t info[40];
    CHECK(obbmeta_nvds_layout_info(layout, info, (int)rand_int(0, 40)) <= 0, "layout_info");
    CHECK(obbmeta_nvds_layout_info((int)rand_int(-3, 5), info, 40) <= 0, "layout_info of any id");
    CHECK(obbmeta_nvds_classifier_layout_info(info, (int)rand_int(0, 40)) <= 0, "classifier_layout_info");
    nv.batch_release(batch, NULL);
    nv.batch_release(other, NULL);
    CHECK(obbmeta_nvds_live_payloads() == 0, "%lld payloads left alive after release",
          (long long)obbmeta_nvds_live_payloads());
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--selftest") == 0) {
        volatile double wide = 1e12;
        volatile uint32_t pixel = (uint32_t)wide; /* what the old writer did with a 1e12-pixel frame */
        printf("selftest: the cast gave %u and nothing stopped it\n", (unsigned)pixel);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: %s SEED ITERATIONS [libnvds_meta.so]\n", argv[0]);
        return 2;
    }
    g_state = strtoull(argv[1], NULL, 10) * 2654435761ull + 1;
    const long iterations = strtol(argv[2], NULL, 10);
    CHECK(obbmeta_geometry_abi_version() == 4 && obbmeta_draw_abi_version() == 1, "abi versions");
    const int layout = argc > 3 ? load_nvds(argv[3]) : 0;
    for (long it = 0; it < iterations; ++it) {
        fuzz_geometry();
        fuzz_pairs_and_matching();
        fuzz_track_step();
        fuzz_draw();
        if (layout) fuzz_nvds_round(layout);
    }
    printf("fuzz OK: %ld iterations, seed %s, %s\n", iterations, argv[1],
           layout ? "geometry + tracker + drawing + DeepStream metadata" : "geometry + tracker + drawing");
    return 0;
}
