/* obbmeta: our own definitions of the parts of NVIDIA DeepStream's metadata that the OBB writer touches.
 *
 * Written from the facts in NVIDIA's public headers (DeepStream 9.1 `nvdsmeta.h`, `nvll_osd_struct.h`), in our
 * words, for x86_64 / aarch64 (LP64). Nothing here includes a DeepStream or glib header: the build needs neither.
 *
 * Two layouts exist:
 *   - OBBMETA_LAYOUT_DS6_8: DeepStream 6.x - 8.0, NvOSD_RectParams ends with `int color_id` (104 bytes),
 *     NvDsObjectMeta is 544 bytes;
 *   - OBBMETA_LAYOUT_DS9:   DeepStream 9.x appended `float rotation_angle` (degrees) to NvOSD_RectParams
 *     (112 bytes with padding), which moves every later field of NvDsObjectMeta (552 bytes) and NvDsDisplayMeta.
 * The layout in use is detected at run time (obbmeta/nvds/layouts.py) from the pools' element_size.
 */
#ifndef OBBMETA_NVDS_META_H
#define OBBMETA_NVDS_META_H

#include <stddef.h>
#include <stdint.h>

#define OBBMETA_LAYOUT_DS6_8 1
#define OBBMETA_LAYOUT_DS9 2

#define OBBMETA_MAX_LABEL 128
#define OBBMETA_UNTRACKED_OBJECT_ID 0xFFFFFFFFFFFFFFFFull
#define OBBMETA_USER_META_DESCRIPTOR "OBBMETA.OBB.V1"

typedef void *(*obbmeta_copy_fn)(void *data, void *user_data);
typedef void (*obbmeta_release_fn)(void *data, void *user_data);

/* glib's doubly linked list node (GList). */
typedef struct obbmeta_glist {
    void *data;
    struct obbmeta_glist *next;
    struct obbmeta_glist *prev;
} obbmeta_glist;

/* NvDsBaseMeta: first member of every metadata element. */
typedef struct {
    void *batch_meta;
    int32_t meta_type;
    void *user_context;
    obbmeta_copy_fn copy_func;
    obbmeta_release_fn release_func;
} obbmeta_base_meta;

/* NvDsMetaPool. */
typedef struct {
    int32_t meta_type;
    uint32_t max_elements_in_pool;
    uint32_t element_size;
    uint32_t num_empty_elements;
    uint32_t num_full_elements;
    obbmeta_glist *empty_list;
    obbmeta_glist *full_list;
    obbmeta_copy_fn copy_func;
    obbmeta_release_fn release_func;
} obbmeta_meta_pool;

/* NvDsBatchMeta, up to the lists (the GRecMutex and what follows are never touched directly). */
typedef struct {
    obbmeta_base_meta base;
    uint32_t max_frames_in_batch;
    uint32_t num_frames_in_batch;
    obbmeta_meta_pool *frame_meta_pool;
    obbmeta_meta_pool *obj_meta_pool;
    obbmeta_meta_pool *classifier_meta_pool;
    obbmeta_meta_pool *display_meta_pool;
    obbmeta_meta_pool *user_meta_pool;
    obbmeta_meta_pool *label_info_meta_pool;
    obbmeta_glist *frame_meta_list;
    obbmeta_glist *batch_user_meta_list;
} obbmeta_batch_meta_head;

/* NvDsFrameMeta up to misc_frame_info: identical in every layout we support. */
typedef struct {
    obbmeta_base_meta base;
    uint32_t pad_index;
    uint32_t batch_id;
    int32_t frame_num;
    uint64_t buf_pts;
    uint64_t ntp_timestamp;
    uint32_t source_id;
    int32_t num_surfaces_per_frame;
    uint32_t source_frame_width;
    uint32_t source_frame_height;
    uint32_t surface_type;
    uint32_t surface_index;
    uint32_t num_obj_meta;
    int32_t infer_done; /* gboolean bInferDone */
    obbmeta_glist *obj_meta_list;
    obbmeta_glist *display_meta_list;
    obbmeta_glist *frame_user_meta_list;
    int64_t misc_frame_info[4];
    uint32_t pipeline_width;
    uint32_t pipeline_height;
} obbmeta_frame_meta_head;

typedef struct {
    double red, green, blue, alpha;
} obbmeta_color;

typedef struct {
    float left, top, width, height;
} obbmeta_bbox;

typedef struct {
    char *font_name;
    uint32_t font_size;
    obbmeta_color font_color;
} obbmeta_font;

typedef struct {
    char *display_text; /* g_malloc'd: DeepStream frees it with g_free */
    uint32_t x_offset;
    uint32_t y_offset;
    obbmeta_font font;
    int32_t set_bg_color;
    obbmeta_color bg_color;
} obbmeta_text_params;

typedef struct {
    float *data;
    uint32_t size;
    float threshold;
    uint32_t width;
    uint32_t height;
} obbmeta_mask_params;

/* NvOSD_RectParams up to color_id: the whole struct before DeepStream 9, and what every layout's starts with. */
#define OBBMETA_RECT_COMMON                                                                                   \
    float left, top, width, height;                                                                            \
    uint32_t border_width;                                                                                     \
    obbmeta_color border_color;                                                                                \
    uint32_t has_bg_color;                                                                                     \
    uint32_t reserved;                                                                                         \
    obbmeta_color bg_color;                                                                                    \
    int32_t has_color_info;                                                                                    \
    int32_t color_id;

typedef struct {
    OBBMETA_RECT_COMMON
} obbmeta_rect_head;

typedef obbmeta_rect_head obbmeta_rect_ds6_8;

typedef struct {
    OBBMETA_RECT_COMMON
    float rotation_angle; /* degrees, clockwise on screen, around the rect's centre */
} obbmeta_rect_ds9;

/* NvDsObjectMeta's members before rect_params: the same in every layout. */
#define OBBMETA_OBJECT_HEAD                                                                                    \
    obbmeta_base_meta base;                                                                                    \
    void *parent;                                                                                              \
    int32_t unique_component_id;                                                                               \
    int32_t class_id;                                                                                          \
    uint64_t object_id;                                                                                        \
    obbmeta_bbox detector_bbox;                                                                                \
    obbmeta_bbox tracker_bbox;                                                                                 \
    float confidence;                                                                                          \
    float tracker_confidence;

/* Its members after rect_params: the same in every layout, moved by the size of rect_params. */
#define OBBMETA_OBJECT_TAIL                                                                                    \
    obbmeta_mask_params mask_params;                                                                           \
    obbmeta_text_params text_params;                                                                           \
    char obj_label[OBBMETA_MAX_LABEL];                                                                         \
    obbmeta_glist *classifier_meta_list;                                                                       \
    obbmeta_glist *obj_user_meta_list;                                                                         \
    int64_t misc_obj_info[4];                                                                                  \
    int64_t reserved[4];

/* NvDsObjectMeta of each layout: the source of the offsets in nvds_meta.c's layout table. */
typedef struct {
    OBBMETA_OBJECT_HEAD
    obbmeta_rect_ds6_8 rect_params;
    OBBMETA_OBJECT_TAIL
} obbmeta_object_meta_ds6_8;

typedef struct {
    OBBMETA_OBJECT_HEAD
    obbmeta_rect_ds9 rect_params;
    OBBMETA_OBJECT_TAIL
} obbmeta_object_meta_ds9;

/* What code written once for every layout reaches of an object: the head, up to rect_params' common members, at
 * the object's address; the tail at the layout's offset of mask_params (nvds_meta.c). */
typedef struct {
    OBBMETA_OBJECT_HEAD
    obbmeta_rect_head rect_params;
} obbmeta_object_head;

typedef struct {
    OBBMETA_OBJECT_TAIL
} obbmeta_object_tail;

/* NvOSD_LineParams / _ArrowParams / _CircleParams (unsigned pixel coordinates). */
typedef struct {
    uint32_t x1, y1, x2, y2;
    uint32_t line_width;
    obbmeta_color line_color;
} obbmeta_line_params;

typedef struct {
    uint32_t x1, y1, x2, y2;
    uint32_t arrow_width;
    int32_t arrow_head;
    obbmeta_color arrow_color;
    uint32_t reserved;
} obbmeta_arrow_params;

typedef struct {
    uint32_t xc, yc, radius;
    obbmeta_color circle_color;
    uint32_t has_bg_color;
    obbmeta_color bg_color;
    uint32_t circle_width;
    uint32_t reserved;
} obbmeta_circle_params;

#define OBBMETA_MAX_DISPLAY_ELEMENTS 16

/* NvDsDisplayMeta's members before the rect array: the same in every layout (the rect array moves everything
 * after it). */
#define OBBMETA_DISPLAY_HEAD                                                                                   \
    obbmeta_base_meta base;                                                                                    \
    uint32_t num_rects, num_labels, num_lines, num_arrows, num_circles;

#define OBBMETA_DISPLAY_TAIL                                                                                   \
    obbmeta_text_params text_params[OBBMETA_MAX_DISPLAY_ELEMENTS];                                             \
    obbmeta_line_params line_params[OBBMETA_MAX_DISPLAY_ELEMENTS];                                             \
    obbmeta_arrow_params arrow_params[OBBMETA_MAX_DISPLAY_ELEMENTS];                                           \
    obbmeta_circle_params circle_params[OBBMETA_MAX_DISPLAY_ELEMENTS];                                         \
    int64_t misc_osd_data[4];                                                                                  \
    int64_t reserved[4];

typedef struct {
    OBBMETA_DISPLAY_HEAD
    obbmeta_rect_ds6_8 rect_params[OBBMETA_MAX_DISPLAY_ELEMENTS];
    OBBMETA_DISPLAY_TAIL
} obbmeta_display_meta_ds6_8;

typedef struct {
    OBBMETA_DISPLAY_HEAD
    obbmeta_rect_ds9 rect_params[OBBMETA_MAX_DISPLAY_ELEMENTS];
    OBBMETA_DISPLAY_TAIL
} obbmeta_display_meta_ds9;

/* The counts, at the display meta's address in every layout; the arrays are found through the layout table. */
typedef struct {
    OBBMETA_DISPLAY_HEAD
} obbmeta_display_head;

/* NvDsUserMeta. */
typedef struct {
    obbmeta_base_meta base;
    void *user_meta_data;
} obbmeta_user_meta;

/* ---- The OBB payload carried as object user meta (documented in docs/nvds.md for C readers). ---- */

#define OBBMETA_OBB_VERSION 1u
/* flags */
#define OBBMETA_OBB_RECT_CLIPPED 1u  /* rect_params was clipped to the frame */
#define OBBMETA_OBB_RECT_ROTATED 2u  /* DS 9 mode: rect_params is the un-rotated box + rotation_angle */
#define OBBMETA_OBB_PREDICTED 4u     /* obbmeta.track predicted it from the object's track: no detector OBB on this frame */
#define OBBMETA_OBB_TRACKED 8u       /* obbmeta.track moved / smoothed the detector's OBB along the object's track */

typedef struct {
    uint32_t version;     /* OBBMETA_OBB_VERSION */
    uint32_t struct_size; /* sizeof(obbmeta_obb_v1) = 64; readers accept >= 64 (later versions only append) */
    float cx, cy, w, h;   /* centre and size, pixels of the batched surface (same space as rect_params) */
    float angle;          /* radians, positive = clockwise on screen (y down) */
    float corners[8];     /* x0,y0 .. x3,y3: starts at the un-rotated top-left, runs clockwise on screen */
    uint32_t flags;       /* OBBMETA_OBB_* */
} obbmeta_obb_v1;

/* ---- Functions we call, resolved at run time (see nvds_meta.c for why). ---- */
typedef struct {
    void *(*acquire_obj_meta)(void *batch);
    void (*add_obj_meta_to_frame)(void *frame, void *obj, void *parent);
    void *(*acquire_user_meta)(void *batch);
    void (*add_user_meta_to_obj)(void *obj, void *user);
    void (*acquire_meta_lock)(void *batch);
    void (*release_meta_lock)(void *batch);
    int32_t (*get_user_meta_type)(char *descriptor);
    void *(*g_malloc)(size_t n);
    void (*g_free)(void *p);
    void *(*acquire_display_meta)(void *batch);
    void (*add_display_meta_to_frame)(void *frame, void *display);
    /* releases the display meta (NVIDIA's release_display_meta zeroes it) and returns it to the pool */
    void (*remove_display_meta_from_frame)(void *frame, void *display);
    /* unlinks an object from its frame and returns it (and its user metas) to the pools */
    void (*remove_obj_meta_from_frame)(void *frame, void *obj);
} obbmeta_nvds_api;

/* ---- Writer input (one call for one frame or for all frames of a batch). ---- */
#define OBBMETA_WRITE_ROTATION 1 /* DS 9: rect_params = un-rotated box + rotation_angle (degrees) */
#define OBBMETA_WRITE_TEXT 2     /* set text_params.display_text (a g_malloc'd copy of the label) */
#define OBBMETA_WRITE_OSD_LIMIT 4 /* only each frame's first osd_limit objects get a border and display text */
#define OBBMETA_WRITE_KEEP_INFER_DONE 8   /* leave bInferDone as it is (objects a tracker makes: no detection ran) */
#define OBBMETA_WRITE_NO_DETECTOR_BBOX 16 /* detector_bbox_info = 0, as nvtracker leaves it on the objects it makes */

typedef struct {
    const float *xywhr;            /* n x 5 */
    const float *scores;           /* n */
    const int64_t *labels;         /* n */
    int64_t n;
    const char *const *label_text; /* num_labels entries, each <= 127 bytes + NUL; NULL: decimal class id */
    int64_t num_labels;
    const double *palette;         /* num_colors x 4 (r, g, b, a in 0..1) */
    int64_t num_colors;
    int32_t component_id;
    uint32_t border_width;
    int32_t flags;                 /* OBBMETA_WRITE_* */
    const int32_t *component_ids;  /* n unique_component_id values; NULL: component_id for every object */
    /* Where: either num_frames frames (batch form) or, when frames is NULL, the single `frame`. */
    void *const *frames;           /* num_frames NvDsFrameMeta* */
    const int64_t *offsets;        /* num_frames + 1: boxes [offsets[f], offsets[f+1]) go to frames[f] */
    const double *frame_sizes;     /* num_frames x (width, height) */
    int64_t num_frames;
    void *frame;                   /* single-frame form */
    double frame_width, frame_height;
    uint8_t *written_mask;         /* n entries set to 1 (written) / 0 (outside the frame); may be NULL */
    uint64_t *addresses;           /* n entries set to the NvDsObjectMeta* written / 0 (outside); may be NULL */
    int64_t n_filtered;            /* out */
    int64_t bad_index;             /* out: first invalid box on error, else -1 */
    int64_t osd_limit;             /* with OBBMETA_WRITE_OSD_LIMIT: objects per frame that nvdsosd draws */
    const uint64_t *parents;       /* n NvDsObjectMeta* parents (0: none); NULL: no parent for any object */
    const double *regions;         /* num_frames (1 in the single-frame form) x (x1, y1, x2, y2): the part of each
                                    * frame objects are kept in and rect_params clipped to; NULL: the whole frame */
} obbmeta_write_params;

/* One row per object of a frame, for read_obbs. */
#define OBBMETA_SOURCE_USER_META 0
#define OBBMETA_SOURCE_ROTATION 1
#define OBBMETA_SOURCE_AABB 2
#define OBBMETA_SOURCE_PREDICTED 3 /* obbmeta's payload with OBBMETA_OBB_PREDICTED */

typedef struct {
    uint64_t address;     /* NvDsObjectMeta* */
    uint64_t object_id;
    int32_t class_id;
    int32_t component_id;
    float confidence;
    float tracker_confidence;
    float rect[4];        /* rect_params left, top, width, height */
    float detector_bbox[4];
    float rotation_angle; /* degrees (DS 9 layout), 0 otherwise */
    int32_t source;       /* OBBMETA_SOURCE_* */
    float xywhr[5];
    float corners[8];
    uint32_t obb_flags;
    int32_t num_user_meta; /* all user metas on the object */
    char label[OBBMETA_MAX_LABEL];
    float tracker_bbox[4]; /* tracker_bbox_info left, top, width, height (unclipped tracker box; 0 before a tracker) */
    uint64_t parent;       /* the parent NvDsObjectMeta* (0: none) */
} obbmeta_read_row;

/* ---- OBB overlay for nvdsosd: one call per frame (obbmeta.osd.add_obb_overlay). ---- */

/* flags */
#define OBBMETA_OVERLAY_LABEL 1       /* move the object's text_params to the top-most vertex (if it has text) */
#define OBBMETA_OVERLAY_HIDE_AABB 2   /* rect_params.border_width = 0 on objects that get an overlay */
#define OBBMETA_OVERLAY_NATIVE 4      /* DS 9: display-meta rects (un-rotated box + rotation_angle), no lines */
#define OBBMETA_OVERLAY_REMOVE_ONLY 8 /* only remove a previous overlay */

/* obbmeta's display metas carry this value in misc_osd_data[OBBMETA_OVERLAY_MARK_SLOT], so that a later call
 * finds and replaces them (and nobody else's). "OBBMOVL1" in ASCII. */
#define OBBMETA_OVERLAY_MARK 0x4F42424D4F564C31ll
#define OBBMETA_OVERLAY_MARK_SLOT 3
/* The label's top edge sits this many pixels above the top-most vertex (attach_obbs and nvinfer put it 10
 * pixels above the box's top). */
#define OBBMETA_LABEL_RISE 10.0

typedef struct {
    const double *palette; /* num_colors x 4 (r, g, b, a in 0..1), indexed by class_id % num_colors */
    int64_t num_colors;
    uint32_t line_width;   /* line width, or border width of the native rects */
    int32_t flags;         /* OBBMETA_OVERLAY_* */
    double frame_width, frame_height;
    /* out */
    int64_t objects;       /* objects in the frame */
    int64_t drawn;         /* objects with an OBB that got at least one line / rect */
    int64_t skipped;       /* objects without an OBB (only rect_params): not drawn as lines */
    int64_t outside;       /* objects with an OBB lying fully outside the frame: nothing to draw */
    int64_t lines, rects;  /* elements written */
    int64_t display_metas; /* display metas acquired */
    int64_t removed;       /* display metas of a previous overlay removed */
    int64_t labels;        /* text_params moved */
    int64_t hidden;        /* rect_params borders set to 0 */
} obbmeta_overlay_params;

/* ---- Track results onto objects already in frames (obbmeta.track): one call per batch. ---- */

/* flags */
#define OBBMETA_UPDATE_OBB 1                /* write xywhr[i] as the OBB payload (added when the object has none) */
#define OBBMETA_UPDATE_OBJECT_ID 2          /* object_id = object_ids[i] */
#define OBBMETA_UPDATE_RECT 4               /* rect_params = the OBB's tight AABB clipped to the frame (DS 9:
                                             * rotation_angle 0), tracker_bbox_info = the same box unclipped */
#define OBBMETA_UPDATE_CONFIDENCE 8         /* confidence = confidence[i] */
#define OBBMETA_UPDATE_TRACKER_CONFIDENCE 16 /* tracker_confidence = tracker_confidence[i] */
#define OBBMETA_UPDATE_ROTATION 32          /* DS 9: rect_params.rotation_angle = rotation_angle[i] unless NaN (after
                                             * OBBMETA_UPDATE_RECT's 0) */

typedef struct {
    const uint64_t *objects;          /* n NvDsObjectMeta*, frame after frame (each once) */
    const float *xywhr;               /* n x 5 (OBBMETA_UPDATE_OBB / _RECT) */
    const uint32_t *obb_flags;        /* n: OBBMETA_OBB_PREDICTED / _TRACKED for the payload (OBBMETA_UPDATE_OBB) */
    const uint64_t *object_ids;       /* n (OBBMETA_UPDATE_OBJECT_ID) */
    const float *confidence;          /* n (OBBMETA_UPDATE_CONFIDENCE) */
    const float *tracker_confidence;  /* n (OBBMETA_UPDATE_TRACKER_CONFIDENCE) */
    const float *rotation_angle;      /* n degrees, NaN: leave (OBBMETA_UPDATE_ROTATION) */
    int64_t n;
    int32_t flags;                    /* OBBMETA_UPDATE_* */
    int64_t added;                    /* out: payloads added to objects that had none */
    int64_t bad_index;                /* out: first offending entry on error, else -1 */
} obbmeta_update_params;

/* ---- Secondary results: NvDsClassifierMeta / NvDsLabelInfo (obbmeta.nvds.classifier). ---- */

/* NvDsClassifierMeta: the same members from DeepStream 6.0 (which added classifier_type) to 9.1; 64 bytes. */
typedef struct {
    obbmeta_base_meta base;
    uint32_t num_labels;         /* NVIDIA's add function counts the labels added */
    int32_t unique_component_id; /* the gie id of the element that classified */
    obbmeta_glist *label_info_list;
    const char *classifier_type; /* never freed by DeepStream, and copied by pointer where copied at all */
} obbmeta_classifier_meta;

/* NvDsLabelInfo: unchanged since DeepStream 4.0; 200 bytes. */
typedef struct {
    obbmeta_base_meta base;
    uint32_t num_classes;
    char result_label[OBBMETA_MAX_LABEL]; /* NUL-terminated, at most 127 bytes of text */
    char *pResult_label;                  /* the whole label when it does not fit; NVIDIA's release g_frees it */
    uint32_t result_class_id;
    uint32_t label_id;                    /* which output (head) of the classifier */
    float result_prob;
} obbmeta_label_info;

/* NVIDIA's classifier functions, installed by their own call (obbmeta_nvds_init_classifier) so that the main
 * table above keeps its shape. */
typedef struct {
    void *(*acquire_classifier_meta)(void *batch);
    void (*add_classifier_meta_to_object)(void *obj, void *classifier);
    void *(*acquire_label_info)(void *batch);
    /* prepends and increments classifier->num_labels */
    void (*add_label_info_to_classifier)(void *classifier, void *label);
} obbmeta_classifier_api;

/* flags */
#define OBBMETA_CLASSIFY_TEXT 1 /* append " " + the labels to text_params.display_text, as nvinfer does */

typedef struct {
    const uint64_t *objects;        /* n NvDsObjectMeta* in frames of `batch`, each once */
    int64_t n;
    const int64_t *label_offsets;   /* n + 1: labels [label_offsets[i], label_offsets[i+1]) go to objects[i] */
    const uint32_t *label_ids;      /* num_labels entries each */
    const uint32_t *class_ids;
    const float *probs;
    const uint32_t *num_classes;
    const char *text;               /* the labels' UTF-8 bytes (no NUL inside a label) */
    const int64_t *text_start;      /* label k is text[text_start[k] .. text_start[k] + text_len[k]) */
    const int64_t *text_len;
    const int32_t *cut_len;         /* bytes of label k that go to result_label (<= 127, on a character boundary) */
    int64_t num_labels;
    int32_t component_id;
    const char *classifier_type;    /* NULL, or a string that outlives every copy of the metadata */
    int32_t flags;                  /* OBBMETA_CLASSIFY_* */
    /* out */
    int64_t classifier_metas;       /* NvDsClassifierMeta written (objects with at least one label) */
    int64_t labels;                 /* NvDsLabelInfo written */
    int64_t long_labels;            /* of which carry pResult_label */
    int64_t frames;                 /* frames whose bInferDone was set */
    int64_t bad_index;              /* first offending object on error, else -1 */
} obbmeta_classify_params;

#endif /* OBBMETA_NVDS_META_H */
