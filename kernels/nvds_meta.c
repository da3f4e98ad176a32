/* obbmeta: bulk writer / reader of oriented boxes in NVIDIA DeepStream metadata, and the C copy / release
 * functions of the OBB object user meta.
 *
 * How NVIDIA's and glib's functions are reached: through a function table (obbmeta_nvds_api) that Python fills
 * once from the ctypes handles of the libnvds_meta.so / libglib-2.0 that obbmeta's loader chose
 * (obbmeta/nvds/_library.py). Why not link or dlsym: linking needs DeepStream at build time (it is not
 * installable on most build machines), and dlsym(RTLD_DEFAULT) could silently bind to a different copy of
 * libnvds_meta than the one the loader reports; the table makes "which library" one explicit decision.
 *
 * Layouts: every function takes the layout id detected at run time (OBBMETA_LAYOUT_*) and is written once over
 * that layout's offsets (obbmeta_layout, below); the struct definitions are ours (nvds_meta.h), written from
 * NVIDIA's headers.
 *
 * This file holds what every role shares (pixel helpers, the function table, the user meta's copy / release, the
 * layouts) and what Python checks at load; each role is a part of its own, included below in the data path's
 * order: nvds_meta_write.inc (attach), nvds_meta_read.inc (read back), nvds_meta_display.inc (nvdsosd lines and
 * overlay), nvds_meta_track.inc (track results onto objects), nvds_meta_classify.inc (secondary results).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "obb_abi.h"
#include "nvds_meta.h"
#include "obb_geometry.h"

#define OBB_EXPORT __attribute__((visibility("default")))

#define OBBMETA_PI 3.14159265358979323846
#define OBBMETA_NVDS_USER_META 7 /* NvDsMetaType NVDS_USER_META: what the user-meta pool stamps on elements */

/* NvOSD coordinates are unsigned ints: round, and keep inside [0, limit - 1] and the uint32 range (never a cast
 * of an out-of-range double, which is undefined behaviour; the entry points also refuse frames wider than 2^32). */
#define OBBMETA_MAX_FRAME_SIDE 4294967296.0

static uint32_t obbmeta_pixel(double v, double limit)
{
    double r = floor(v + 0.5);
    if (r > limit - 1.0) r = limit - 1.0;
    if (r > 4294967295.0) r = 4294967295.0;
    return r > 0.0 ? (uint32_t)r : 0u; /* NaN lands here too */
}

/* A frame side the writers accept: positive and at most 2^32 pixels (NaN fails). */
static int obbmeta_frame_side_ok(double v) { return v > 0.0 && v <= OBBMETA_MAX_FRAME_SIDE; }

static float obbmeta_degrees(double radians) { return (float)(radians * (180.0 / OBBMETA_PI)); }

/* The un-rotated box (left, top, width, height) centred on the OBB: what nvdsosd 9.x rotates around its centre. */
static void obbmeta_unrotated_rect(const float b[5], double out[4])
{
    out[0] = (double)b[0] - 0.5 * (double)b[2];
    out[1] = (double)b[1] - 0.5 * (double)b[3];
    out[2] = (double)b[2];
    out[3] = (double)b[3];
}

/* The palette colour (rgba) of a class id, also for negative ids. */
static const double *obbmeta_palette_color(const double *palette, int64_t num_colors, int64_t class_id)
{
    const int64_t nc = num_colors > 0 ? num_colors : 1;
    return palette + 4 * ((class_id % nc + nc) % nc);
}

static obbmeta_nvds_api g_api;
static int g_ready = 0;
static int32_t g_obb_meta_type = -1;
/* Fonts are not freed by DeepStream and are copied by pointer: a literal that lives as long as the process. */
static char g_font_name[] = "Serif";

/* The label style of every object obbmeta writes: white text on black, at (x, y), in obbmeta's font. */
static void obbmeta_label_style(obbmeta_text_params *t, uint32_t x, uint32_t y, uint32_t font_size)
{
    t->x_offset = x;
    t->y_offset = y;
    t->font.font_name = g_font_name;
    t->font.font_size = font_size;
    t->font.font_color.red = t->font.font_color.green = t->font.font_color.blue = t->font.font_color.alpha = 1.0;
    t->set_bg_color = 1;
    t->bg_color.red = t->bg_color.green = t->bg_color.blue = 0.0;
    t->bg_color.alpha = 1.0;
}

static const double g_transparent[4] = {0.0, 0.0, 0.0, 0.0};
/* Payloads allocated and not yet released (writer + copy_func minus release_func): a leak detector for tests
 * and for users debugging a pipeline (obbmeta.nvds.live_payloads()). */
static int64_t g_live_payloads = 0;

enum {
    OBBMETA_OK = 0,
    OBBMETA_ERR_NOT_READY = -1,
    OBBMETA_ERR_LAYOUT = -2,
    OBBMETA_ERR_INVALID_BOX = -3,
    OBBMETA_ERR_POOL_MISMATCH = -4,
    OBBMETA_ERR_LABEL = -5,
    OBBMETA_ERR_ARGUMENT = -6,
    OBBMETA_ERR_FOREIGN_FRAME = -7,
};

/* The error codes above, in the order of obbmeta.nvds._core.WriterError, which checks them at load (as it checks
 * the struct offsets): the Python enum and this one cannot drift apart unnoticed. Returns how many there are. */
OBB_EXPORT int obbmeta_nvds_error_codes(int32_t *out, int n)
{
    static const int32_t codes[] = {
        OBBMETA_ERR_NOT_READY, OBBMETA_ERR_LAYOUT, OBBMETA_ERR_INVALID_BOX, OBBMETA_ERR_POOL_MISMATCH,
        OBBMETA_ERR_LABEL, OBBMETA_ERR_ARGUMENT, OBBMETA_ERR_FOREIGN_FRAME,
    };
    const int count = (int)(sizeof codes / sizeof codes[0]);
    for (int i = 0; i < count && i < n; i++) out[i] = codes[i];
    return count;
}

/* ---------------------------------------------------------------- user meta copy / release (DeepStream calls
 * both with the NvDsUserMeta* as `data`, never with the payload). */

OBB_EXPORT void *obbmeta_obb_meta_copy(void *data, void *user_data)
{
    (void)user_data;
    const obbmeta_user_meta *src = (const obbmeta_user_meta *)data;
    if (!src || !src->user_meta_data || !g_ready) return NULL;
    obbmeta_obb_v1 *copy = (obbmeta_obb_v1 *)g_api.g_malloc(sizeof(obbmeta_obb_v1));
    memcpy(copy, src->user_meta_data, sizeof(obbmeta_obb_v1));
    __atomic_add_fetch(&g_live_payloads, 1, __ATOMIC_RELAXED);
    return copy;
}

OBB_EXPORT void obbmeta_obb_meta_release(void *data, void *user_data)
{
    (void)user_data;
    obbmeta_user_meta *um = (obbmeta_user_meta *)data;
    if (!um) return;
    if (um->user_meta_data && g_ready) {
        g_api.g_free(um->user_meta_data);
        __atomic_sub_fetch(&g_live_payloads, 1, __ATOMIC_RELAXED);
    }
    /* The user-meta pool has no release function of its own and hands elements out again without clearing
     * them: leave nothing of ours behind that a later owner could call or free. */
    um->user_meta_data = NULL;
    um->base.copy_func = NULL;
    um->base.release_func = NULL;
    um->base.meta_type = OBBMETA_NVDS_USER_META;
}

/* ---------------------------------------------------------------- set-up */

OBB_EXPORT int32_t obbmeta_nvds_init(const obbmeta_nvds_api *api)
{
    if (!api || !api->acquire_obj_meta || !api->add_obj_meta_to_frame || !api->acquire_user_meta ||
        !api->add_user_meta_to_obj || !api->acquire_meta_lock || !api->release_meta_lock ||
        !api->get_user_meta_type || !api->g_malloc || !api->g_free || !api->acquire_display_meta ||
        !api->add_display_meta_to_frame || !api->remove_display_meta_from_frame || !api->remove_obj_meta_from_frame)
        return OBBMETA_ERR_ARGUMENT;
    g_api = *api;
    /* nvds_get_user_meta_type interns the descriptor with g_quark_from_static_string: it must outlive the
     * process, hence a string literal here and never a caller's temporary buffer. */
    g_obb_meta_type = g_api.get_user_meta_type((char *)OBBMETA_USER_META_DESCRIPTOR);
    g_ready = 1;
    return g_obb_meta_type;
}

OBB_EXPORT int32_t obbmeta_nvds_obb_meta_type(void) { return g_obb_meta_type; }

OBB_EXPORT int64_t obbmeta_nvds_live_payloads(void) { return __atomic_load_n(&g_live_payloads, __ATOMIC_RELAXED); }

OBB_EXPORT const char *obbmeta_nvds_obb_meta_descriptor(void) { return OBBMETA_USER_META_DESCRIPTOR; }

/* ---------------------------------------------------------------- layouts
 *
 * DeepStream 9 appended rotation_angle to NvOSD_RectParams. That moves every member of NvDsObjectMeta after
 * rect_params (the tail, obbmeta_object_tail) and every member of NvDsDisplayMeta after its rect array. A layout
 * is where those sit, measured on the typedefs of nvds_meta.h; every function below is written once over it. */
typedef struct {
    int id;                  /* OBBMETA_LAYOUT_* */
    size_t obj_size;         /* sizeof(NvDsObjectMeta): the object pool's element size */
    size_t obj_tail;         /* offsetof(NvDsObjectMeta, mask_params): where obbmeta_object_tail starts */
    ptrdiff_t rect_rotation; /* offsetof(NvOSD_RectParams, rotation_angle); -1: the layout has none */
    size_t rect_size;        /* sizeof(NvOSD_RectParams): the stride of the display meta's rect array */
    size_t dm_size;          /* sizeof(NvDsDisplayMeta): the display pool's element size */
    size_t dm_rects;         /* offsetof(NvDsDisplayMeta, rect_params) */
    size_t dm_lines;         /* offsetof(NvDsDisplayMeta, line_params) */
    size_t dm_misc;          /* offsetof(NvDsDisplayMeta, misc_osd_data) */
} obbmeta_layout;

static const obbmeta_layout g_layouts[] = {
    {
        .id = OBBMETA_LAYOUT_DS6_8,
        .obj_size = sizeof(obbmeta_object_meta_ds6_8),
        .obj_tail = offsetof(obbmeta_object_meta_ds6_8, mask_params),
        .rect_rotation = -1,
        .rect_size = sizeof(obbmeta_rect_ds6_8),
        .dm_size = sizeof(obbmeta_display_meta_ds6_8),
        .dm_rects = offsetof(obbmeta_display_meta_ds6_8, rect_params),
        .dm_lines = offsetof(obbmeta_display_meta_ds6_8, line_params),
        .dm_misc = offsetof(obbmeta_display_meta_ds6_8, misc_osd_data),
    },
    {
        .id = OBBMETA_LAYOUT_DS9,
        .obj_size = sizeof(obbmeta_object_meta_ds9),
        .obj_tail = offsetof(obbmeta_object_meta_ds9, mask_params),
        .rect_rotation = offsetof(obbmeta_rect_ds9, rotation_angle),
        .rect_size = sizeof(obbmeta_rect_ds9),
        .dm_size = sizeof(obbmeta_display_meta_ds9),
        .dm_rects = offsetof(obbmeta_display_meta_ds9, rect_params),
        .dm_lines = offsetof(obbmeta_display_meta_ds9, line_params),
        .dm_misc = offsetof(obbmeta_display_meta_ds9, misc_osd_data),
    },
};

/* The head and tail views must sit where each layout's own typedef puts the same members. */
#define OBBMETA_SAME_HEAD(T, M) \
    _Static_assert(offsetof(T, M) == offsetof(obbmeta_object_head, M), #T "." #M " moved in the head")
#define OBBMETA_SAME_TAIL(T, M)                                                                               \
    _Static_assert(offsetof(T, M) - offsetof(T, mask_params) == offsetof(obbmeta_object_tail, M),              \
                   #T "." #M " moved in the tail")
#define OBBMETA_SAME_DISPLAY_HEAD(T, M) \
    _Static_assert(offsetof(T, M) == offsetof(obbmeta_display_head, M), #T "." #M " moved in the head")
#define OBBMETA_CHECK_LAYOUT(OBJ, DM)                                                                         \
    OBBMETA_SAME_HEAD(OBJ, parent);                                                                            \
    OBBMETA_SAME_HEAD(OBJ, unique_component_id);                                                               \
    OBBMETA_SAME_HEAD(OBJ, class_id);                                                                          \
    OBBMETA_SAME_HEAD(OBJ, object_id);                                                                         \
    OBBMETA_SAME_HEAD(OBJ, detector_bbox);                                                                     \
    OBBMETA_SAME_HEAD(OBJ, tracker_bbox);                                                                      \
    OBBMETA_SAME_HEAD(OBJ, confidence);                                                                        \
    OBBMETA_SAME_HEAD(OBJ, tracker_confidence);                                                                \
    OBBMETA_SAME_HEAD(OBJ, rect_params);                                                                       \
    OBBMETA_SAME_HEAD(OBJ, rect_params.color_id);                                                              \
    _Static_assert(offsetof(OBJ, rect_params) + sizeof(obbmeta_rect_head) <= offsetof(OBJ, mask_params),       \
                   #OBJ ": the tail overlaps the head");                                                       \
    OBBMETA_SAME_TAIL(OBJ, text_params);                                                                       \
    OBBMETA_SAME_TAIL(OBJ, obj_label);                                                                         \
    OBBMETA_SAME_TAIL(OBJ, classifier_meta_list);                                                              \
    OBBMETA_SAME_TAIL(OBJ, obj_user_meta_list);                                                                \
    OBBMETA_SAME_TAIL(OBJ, misc_obj_info);                                                                     \
    _Static_assert(sizeof(OBJ) == offsetof(OBJ, mask_params) + sizeof(obbmeta_object_tail), #OBJ " size");      \
    OBBMETA_SAME_DISPLAY_HEAD(DM, num_rects);                                                                  \
    OBBMETA_SAME_DISPLAY_HEAD(DM, num_lines);                                                                  \
    _Static_assert(offsetof(DM, rect_params) >= sizeof(obbmeta_display_head), #DM ": rects overlap the counts")
OBBMETA_CHECK_LAYOUT(obbmeta_object_meta_ds6_8, obbmeta_display_meta_ds6_8);
OBBMETA_CHECK_LAYOUT(obbmeta_object_meta_ds9, obbmeta_display_meta_ds9);

/* The layout of an OBBMETA_LAYOUT_* id; NULL (OBBMETA_ERR_LAYOUT for the caller) for any other value. */
static const obbmeta_layout *obbmeta_layout_of(int id)
{
    for (size_t k = 0; k < sizeof g_layouts / sizeof g_layouts[0]; ++k)
        if (g_layouts[k].id == id) return &g_layouts[k];
    return NULL;
}

static obbmeta_object_tail *obbmeta_tail(const obbmeta_layout *L, void *obj)
{
    return (obbmeta_object_tail *)((char *)obj + L->obj_tail);
}

/* rect_params.rotation_angle (degrees) of an object's or a display meta's rect; NULL in a layout without it. */
static float *obbmeta_rotation(const obbmeta_layout *L, obbmeta_rect_head *rect)
{
    return L->rect_rotation < 0 ? NULL : (float *)((char *)rect + L->rect_rotation);
}

static obbmeta_rect_head *obbmeta_dm_rect(const obbmeta_layout *L, obbmeta_display_head *dm, uint32_t i)
{
    return (obbmeta_rect_head *)((char *)dm + L->dm_rects + (size_t)i * L->rect_size);
}

static obbmeta_line_params *obbmeta_dm_lines(const obbmeta_layout *L, obbmeta_display_head *dm)
{
    return (obbmeta_line_params *)((char *)dm + L->dm_lines);
}

static int64_t *obbmeta_dm_misc(const obbmeta_layout *L, void *dm) { return (int64_t *)((char *)dm + L->dm_misc); }

/* sizeof / offsetof of what we write, from the layout table and the head / tail views, so that Python checks its
 * ctypes mirror against what the writer uses. */
OBB_EXPORT int obbmeta_nvds_layout_info(int layout, int64_t *out, int n)
{
    if (n < 28) return OBBMETA_ERR_ARGUMENT;
    const obbmeta_layout *L = obbmeta_layout_of(layout);
    if (!L) return OBBMETA_ERR_LAYOUT;
    const size_t rect = offsetof(obbmeta_object_head, rect_params);
    out[0] = (int64_t)L->obj_size;
    out[1] = offsetof(obbmeta_object_head, parent);
    out[2] = offsetof(obbmeta_object_head, unique_component_id);
    out[3] = offsetof(obbmeta_object_head, class_id);
    out[4] = offsetof(obbmeta_object_head, object_id);
    out[5] = offsetof(obbmeta_object_head, detector_bbox);
    out[6] = offsetof(obbmeta_object_head, confidence);
    out[7] = (int64_t)rect;
    out[8] = offsetof(obbmeta_object_head, rect_params.border_width);
    out[9] = offsetof(obbmeta_object_head, rect_params.border_color);
    out[10] = (int64_t)L->obj_tail;
    out[11] = (int64_t)(L->obj_tail + offsetof(obbmeta_object_tail, text_params));
    out[12] = (int64_t)(L->obj_tail + offsetof(obbmeta_object_tail, obj_label));
    out[13] = (int64_t)(L->obj_tail + offsetof(obbmeta_object_tail, classifier_meta_list));
    out[14] = (int64_t)(L->obj_tail + offsetof(obbmeta_object_tail, obj_user_meta_list));
    out[15] = (int64_t)(L->obj_tail + offsetof(obbmeta_object_tail, misc_obj_info));
    out[16] = L->rect_rotation < 0 ? -1 : (int64_t)rect + L->rect_rotation;
    out[17] = sizeof(obbmeta_frame_meta_head);
    out[18] = sizeof(obbmeta_user_meta);
    out[19] = sizeof(obbmeta_obb_v1);
    out[20] = (int64_t)L->dm_size;
    out[21] = offsetof(obbmeta_display_head, num_lines);
    out[22] = (int64_t)L->dm_lines;
    out[23] = sizeof(obbmeta_line_params);
    out[24] = offsetof(obbmeta_display_head, num_rects);
    out[25] = (int64_t)L->dm_rects;
    out[26] = (int64_t)L->rect_size;
    out[27] = (int64_t)L->dm_misc;
    return OBBMETA_OK;
}

/* The pools the object writers take elements from hold elements of this layout. */
static int obbmeta_pool_matches(const obbmeta_layout *L, void *batch)
{
    const obbmeta_batch_meta_head *bm = (const obbmeta_batch_meta_head *)batch;
    if (!bm->obj_meta_pool || !bm->user_meta_pool) return 0;
    return bm->obj_meta_pool->element_size == (uint32_t)L->obj_size &&
           bm->user_meta_pool->element_size == (uint32_t)sizeof(obbmeta_user_meta);
}

static int obbmeta_display_pool_matches(const obbmeta_layout *L, void *batch)
{
    const obbmeta_batch_meta_head *bm = (const obbmeta_batch_meta_head *)batch;
    return bm->display_meta_pool && bm->display_meta_pool->element_size == (uint32_t)L->dm_size;
}

/* ---------------------------------------------------------------- the roles, one file each (same translation
 * unit: they share the layouts, the function table and the helpers above) */
#include "nvds_meta_write.inc"
#include "nvds_meta_read.inc"
#include "nvds_meta_display.inc"
#include "nvds_meta_track.inc"
#include "nvds_meta_classify.inc"

/* ---------------------------------------------------------------- what Python checks at load
 * obbmeta/nvds/_core.py (NVDS_META, an obbmeta._native.NativeLibrary) mirrors the parameter structs and flags of
 * nvds_meta.h in ctypes. At load it compares them with this table: `names[i]` is "T" for sizeof(T), "T.f" for
 * offsetof(T, f) (the function tables whole, elsewhere the fields whose shift would go unnoticed: what the writers
 * report back, and a few inputs after fields of another size), else a constant, with its value in `values[i]`.
 * Writes at most `capacity` entries and returns how many there are. The ABI version changes when an entry point's
 * signature does. */
OBB_EXPORT int obbmeta_nvds_abi_version(void) { return 9; }

OBB_EXPORT int64_t obbmeta_nvds_abi_table(const char **names, int64_t *values, int64_t capacity)
{
    static const obb_abi_entry table[] = {
        OBB_ABI_SIZE(obbmeta_nvds_api),
        OBB_ABI_OFFSET(obbmeta_nvds_api, acquire_obj_meta), OBB_ABI_OFFSET(obbmeta_nvds_api, add_obj_meta_to_frame),
        OBB_ABI_OFFSET(obbmeta_nvds_api, acquire_user_meta), OBB_ABI_OFFSET(obbmeta_nvds_api, add_user_meta_to_obj),
        OBB_ABI_OFFSET(obbmeta_nvds_api, acquire_meta_lock), OBB_ABI_OFFSET(obbmeta_nvds_api, release_meta_lock),
        OBB_ABI_OFFSET(obbmeta_nvds_api, get_user_meta_type), OBB_ABI_OFFSET(obbmeta_nvds_api, g_malloc),
        OBB_ABI_OFFSET(obbmeta_nvds_api, g_free), OBB_ABI_OFFSET(obbmeta_nvds_api, acquire_display_meta),
        OBB_ABI_OFFSET(obbmeta_nvds_api, add_display_meta_to_frame),
        OBB_ABI_OFFSET(obbmeta_nvds_api, remove_display_meta_from_frame),
        OBB_ABI_OFFSET(obbmeta_nvds_api, remove_obj_meta_from_frame),

        OBB_ABI_SIZE(obbmeta_write_params),
        OBB_ABI_OFFSET(obbmeta_write_params, n), OBB_ABI_OFFSET(obbmeta_write_params, component_id),
        OBB_ABI_OFFSET(obbmeta_write_params, flags), OBB_ABI_OFFSET(obbmeta_write_params, frame_width),
        OBB_ABI_OFFSET(obbmeta_write_params, n_filtered), OBB_ABI_OFFSET(obbmeta_write_params, bad_index),
        OBB_ABI_OFFSET(obbmeta_write_params, component_ids), OBB_ABI_OFFSET(obbmeta_write_params, addresses),
        OBB_ABI_OFFSET(obbmeta_write_params, parents), OBB_ABI_OFFSET(obbmeta_write_params, regions),

        OBB_ABI_SIZE(obbmeta_overlay_params),
        OBB_ABI_OFFSET(obbmeta_overlay_params, line_width), OBB_ABI_OFFSET(obbmeta_overlay_params, flags),
        OBB_ABI_OFFSET(obbmeta_overlay_params, objects), OBB_ABI_OFFSET(obbmeta_overlay_params, drawn),
        OBB_ABI_OFFSET(obbmeta_overlay_params, removed), OBB_ABI_OFFSET(obbmeta_overlay_params, hidden),

        OBB_ABI_SIZE(obbmeta_read_row),
        OBB_ABI_OFFSET(obbmeta_read_row, object_id), OBB_ABI_OFFSET(obbmeta_read_row, class_id),
        OBB_ABI_OFFSET(obbmeta_read_row, confidence), OBB_ABI_OFFSET(obbmeta_read_row, rotation_angle),
        OBB_ABI_OFFSET(obbmeta_read_row, source), OBB_ABI_OFFSET(obbmeta_read_row, xywhr),
        OBB_ABI_OFFSET(obbmeta_read_row, obb_flags), OBB_ABI_OFFSET(obbmeta_read_row, label),
        OBB_ABI_OFFSET(obbmeta_read_row, tracker_bbox), OBB_ABI_OFFSET(obbmeta_read_row, parent),

        OBB_ABI_SIZE(obbmeta_update_params),
        OBB_ABI_OFFSET(obbmeta_update_params, n), OBB_ABI_OFFSET(obbmeta_update_params, flags),
        OBB_ABI_OFFSET(obbmeta_update_params, added), OBB_ABI_OFFSET(obbmeta_update_params, bad_index),
        OBB_ABI_OFFSET(obbmeta_update_params, rotation_angle),

        OBB_ABI_SIZE(obbmeta_classifier_api),
        OBB_ABI_OFFSET(obbmeta_classifier_api, acquire_classifier_meta),
        OBB_ABI_OFFSET(obbmeta_classifier_api, add_classifier_meta_to_object),
        OBB_ABI_OFFSET(obbmeta_classifier_api, acquire_label_info),
        OBB_ABI_OFFSET(obbmeta_classifier_api, add_label_info_to_classifier),

        OBB_ABI_SIZE(obbmeta_classify_params),
        OBB_ABI_OFFSET(obbmeta_classify_params, num_labels), OBB_ABI_OFFSET(obbmeta_classify_params, component_id),
        OBB_ABI_OFFSET(obbmeta_classify_params, flags), OBB_ABI_OFFSET(obbmeta_classify_params, classifier_metas),
        OBB_ABI_OFFSET(obbmeta_classify_params, labels), OBB_ABI_OFFSET(obbmeta_classify_params, long_labels),
        OBB_ABI_OFFSET(obbmeta_classify_params, frames), OBB_ABI_OFFSET(obbmeta_classify_params, bad_index),

        OBB_ABI_CONST(OBBMETA_WRITE_ROTATION), OBB_ABI_CONST(OBBMETA_WRITE_TEXT),
        OBB_ABI_CONST(OBBMETA_WRITE_OSD_LIMIT), OBB_ABI_CONST(OBBMETA_WRITE_KEEP_INFER_DONE),
        OBB_ABI_CONST(OBBMETA_WRITE_NO_DETECTOR_BBOX),
        OBB_ABI_CONST(OBBMETA_OVERLAY_LABEL), OBB_ABI_CONST(OBBMETA_OVERLAY_HIDE_AABB),
        OBB_ABI_CONST(OBBMETA_OVERLAY_NATIVE), OBB_ABI_CONST(OBBMETA_OVERLAY_REMOVE_ONLY),
        OBB_ABI_CONST(OBBMETA_OVERLAY_MARK), OBB_ABI_CONST(OBBMETA_OVERLAY_MARK_SLOT),
        OBB_ABI_CONST(OBBMETA_UPDATE_OBB), OBB_ABI_CONST(OBBMETA_UPDATE_OBJECT_ID),
        OBB_ABI_CONST(OBBMETA_UPDATE_RECT), OBB_ABI_CONST(OBBMETA_UPDATE_ROTATION),
        OBB_ABI_CONST(OBBMETA_UPDATE_CONFIDENCE), OBB_ABI_CONST(OBBMETA_UPDATE_TRACKER_CONFIDENCE),
        OBB_ABI_CONST(OBBMETA_CLASSIFY_TEXT), OBB_ABI_CONST(OBBMETA_MAX_LABEL),
        OBB_ABI_CONST(OBBMETA_OBB_VERSION), OBB_ABI_CONST(OBBMETA_OBB_RECT_CLIPPED),
        OBB_ABI_CONST(OBBMETA_OBB_RECT_ROTATED), OBB_ABI_CONST(OBBMETA_OBB_PREDICTED), OBB_ABI_CONST(OBBMETA_OBB_TRACKED),
        OBB_ABI_CONST(OBBMETA_SOURCE_USER_META), OBB_ABI_CONST(OBBMETA_SOURCE_ROTATION),
        OBB_ABI_CONST(OBBMETA_SOURCE_AABB), OBB_ABI_CONST(OBBMETA_SOURCE_PREDICTED),
    };
    return OBB_ABI_COPY(table, names, values, capacity);
}
