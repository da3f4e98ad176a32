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
        !api->add_display_meta_to_frame || !api->remove_display_meta_from_frame)
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

/* ---------------------------------------------------------------- geometry helpers (box facts come from
 * obb_geometry.h; these only decide frame visibility). */

/* True when the oriented box and the region [x0,x1]x[y0,y1] share interior: separating-axis test on the region's
 * axes (the tight AABB) and on the box's two axes. Touching counts as outside. */
static int obbmeta_box_meets_region(const float b[5], const double aabb[4], const double r[4])
{
    if (aabb[2] <= r[0] || aabb[3] <= r[1] || aabb[0] >= r[2] || aabb[1] >= r[3]) return 0;
    const double c = cos((double)b[4]), s = sin((double)b[4]);
    const double axes[2][2] = {{c, s}, {-s, c}};
    const double half[2] = {0.5 * (double)b[2], 0.5 * (double)b[3]};
    const double fx[4] = {r[0], r[2], r[2], r[0]}, fy[4] = {r[1], r[1], r[3], r[3]};
    for (int k = 0; k < 2; ++k) {
        const double centre = (double)b[0] * axes[k][0] + (double)b[1] * axes[k][1];
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < 4; ++i) {
            const double p = fx[i] * axes[k][0] + fy[i] * axes[k][1];
            lo = p < lo ? p : lo;
            hi = p > hi ? p : hi;
        }
        if (hi <= centre - half[k] || lo >= centre + half[k]) return 0;
    }
    return 1;
}

static void obbmeta_set_color(obbmeta_color *c, const double *rgba)
{
    c->red = rgba[0];
    c->green = rgba[1];
    c->blue = rgba[2];
    c->alpha = rgba[3];
}

/* The OBB payload of box b (cx, cy, w, h, angle) with its corners, version, size and flags. */
static void obbmeta_set_payload(obbmeta_obb_v1 *obb, const float b[5], uint32_t flags)
{
    double corners[8];
    obb_corners(b, corners);
    obb->version = OBBMETA_OBB_VERSION;
    obb->struct_size = (uint32_t)sizeof(obbmeta_obb_v1);
    obb->cx = b[0];
    obb->cy = b[1];
    obb->w = b[2];
    obb->h = b[3];
    obb->angle = b[4];
    for (int k = 0; k < 8; ++k) obb->corners[k] = (float)corners[k];
    obb->flags = flags;
}

/* A new payload (g_malloc'd, filled by the caller) attached to obj as obbmeta's user meta, with its C copy and
 * release functions. Pool elements come back dirty: all four fields are set on every acquire. */
static obbmeta_obb_v1 *obbmeta_add_payload(void *batch, void *obj)
{
    obbmeta_obb_v1 *obb = (obbmeta_obb_v1 *)g_api.g_malloc(sizeof(obbmeta_obb_v1));
    obbmeta_user_meta *um = (obbmeta_user_meta *)g_api.acquire_user_meta(batch);
    um->user_meta_data = obb;
    um->base.meta_type = g_obb_meta_type;
    um->base.copy_func = obbmeta_obb_meta_copy;
    um->base.release_func = obbmeta_obb_meta_release;
    um->base.user_context = NULL;
    g_api.add_user_meta_to_obj(obj, um);
    __atomic_add_fetch(&g_live_payloads, 1, __ATOMIC_RELAXED);
    return obb;
}

static char *obbmeta_strdup(const char *s)
{
    const size_t n = strlen(s);
    char *d = (char *)g_api.g_malloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

/* Fills one object meta. An object that is not `visible` (past the frame's osd_limit) gets no border (0 px,
 * transparent) and no display text: nothing nvdsosd draws. */
static void obbmeta_fill(const obbmeta_layout *L, void *obj, const float b[5], const double aabb[4],
                         const double rect[4], float score, int32_t class_id, int32_t component_id, const char *label,
                         const obbmeta_write_params *p, double fw, double fh, int visible)
{
    obbmeta_object_head *o = (obbmeta_object_head *)obj;
    obbmeta_object_tail *t = obbmeta_tail(L, obj);
    const int detected = !(p->flags & OBBMETA_WRITE_NO_DETECTOR_BBOX);
    o->parent = NULL;
    o->unique_component_id = component_id;
    o->class_id = class_id;
    o->object_id = OBBMETA_UNTRACKED_OBJECT_ID;
    o->detector_bbox.left = detected ? (float)aabb[0] : 0.0f;
    o->detector_bbox.top = detected ? (float)aabb[1] : 0.0f;
    o->detector_bbox.width = detected ? (float)(aabb[2] - aabb[0]) : 0.0f;
    o->detector_bbox.height = detected ? (float)(aabb[3] - aabb[1]) : 0.0f;
    o->confidence = score;
    o->rect_params.left = (float)rect[0];
    o->rect_params.top = (float)rect[1];
    o->rect_params.width = (float)rect[2];
    o->rect_params.height = (float)rect[3];
    o->rect_params.border_width = visible ? p->border_width : 0u;
    obbmeta_set_color(&o->rect_params.border_color,
                      visible ? obbmeta_palette_color(p->palette, p->num_colors, class_id) : g_transparent);
    o->rect_params.has_bg_color = 0;
    o->rect_params.has_color_info = 0;
    o->rect_params.color_id = 0;
    float *rotation = obbmeta_rotation(L, &o->rect_params);
    if (rotation) *rotation = (p->flags & OBBMETA_WRITE_ROTATION) ? obbmeta_degrees(b[4]) : 0.0f;
    strncpy(t->obj_label, label, OBBMETA_MAX_LABEL - 1);
    t->obj_label[OBBMETA_MAX_LABEL - 1] = '\0';
    if ((p->flags & OBBMETA_WRITE_TEXT) && visible) {
        if (t->text_params.display_text) g_api.g_free(t->text_params.display_text);
        t->text_params.display_text = obbmeta_strdup(t->obj_label);
        obbmeta_label_style(&t->text_params, obbmeta_pixel(rect[0], fw),
                            obbmeta_pixel(rect[1] - OBBMETA_LABEL_RISE, fh), 10);
    }
}

/* Writes the objects of one frame; the caller holds the batch lock. */
static int64_t obbmeta_write_frame(const obbmeta_layout *L, void *batch, void *frame, const obbmeta_write_params *p,
                                   int64_t begin, int64_t end, double fw, double fh, const double *region,
                                   uint8_t *written_mask, int64_t *n_filtered)
{
    int64_t written = 0;
    char number[32];
    const double whole[4] = {0.0, 0.0, fw, fh};
    const double *r = region ? region : whole;
    for (int64_t i = begin; i < end; ++i) {
        const float *b = p->xywhr + 5 * i;
        const int64_t cls = p->labels[i];

        double aabb[4];
        obb_aabb(b, aabb);
        if (!obbmeta_box_meets_region(b, aabb, r)) {
            if (written_mask) written_mask[i] = 0;
            if (p->addresses) p->addresses[i] = 0;
            ++*n_filtered;
            continue;
        }
        double rect[4];
        int clipped = 0;
        if (p->flags & OBBMETA_WRITE_ROTATION) {
            /* nvdsosd rotates rect_params around its centre by rotation_angle: the un-rotated box, unclipped
             * (clipping it would move the centre of the drawn box). */
            obbmeta_unrotated_rect(b, rect);
        } else {
            const double x1 = aabb[0] > r[0] ? aabb[0] : r[0], y1 = aabb[1] > r[1] ? aabb[1] : r[1];
            const double x2 = aabb[2] < r[2] ? aabb[2] : r[2], y2 = aabb[3] < r[3] ? aabb[3] : r[3];
            clipped = x1 != aabb[0] || y1 != aabb[1] || x2 != aabb[2] || y2 != aabb[3];
            rect[0] = x1;
            rect[1] = y1;
            rect[2] = x2 - x1;
            rect[3] = y2 - y1;
        }
        const char *label;
        if (p->label_text) {
            label = p->label_text[cls];
        } else {
            /* no class names: the class id in decimal, like nvinfer without a labels file */
            int k = 0;
            char rev[24];
            int64_t v = cls;
            do {
                rev[k++] = (char)('0' + (v % 10));
                v /= 10;
            } while (v && k < 23);
            for (int j = 0; j < k; ++j) number[j] = rev[k - 1 - j];
            number[k] = '\0';
            label = number;
        }

        const int visible = !(p->flags & OBBMETA_WRITE_OSD_LIMIT) || written < p->osd_limit;
        void *obj = g_api.acquire_obj_meta(batch);
        obbmeta_fill(L, obj, b, aabb, rect, p->scores[i], (int32_t)cls,
                     p->component_ids ? p->component_ids[i] : p->component_id, label, p, fw, fh, visible);

        obbmeta_set_payload(obbmeta_add_payload(batch, obj), b,
                            (clipped ? OBBMETA_OBB_RECT_CLIPPED : 0u) |
                                ((p->flags & OBBMETA_WRITE_ROTATION) ? OBBMETA_OBB_RECT_ROTATED : 0u));
        g_api.add_obj_meta_to_frame(frame, obj, p->parents ? (void *)(uintptr_t)p->parents[i] : NULL);
        if (written_mask) written_mask[i] = 1;
        if (p->addresses) p->addresses[i] = (uint64_t)(uintptr_t)obj;
        ++written;
    }
    /* Detection ran on this frame even when it found nothing: nvtracker reads this flag. */
    if (!(p->flags & OBBMETA_WRITE_KEEP_INFER_DONE)) ((obbmeta_frame_meta_head *)frame)->infer_done = 1;
    return written;
}

/* Writes the boxes [offsets[f], offsets[f+1]) into frames[f] for every f (or all boxes into p->frame), under one
 * batch lock. One pointer argument on purpose: each extra ctypes argument costs about a microsecond.
 * Returns the number written, or a negative OBBMETA_ERR_*; on error nothing is written and p->bad_index names
 * the first offending object (or -1). */
OBB_EXPORT int64_t obbmeta_nvds_attach(int layout, void *batch, obbmeta_write_params *p)
{
    if (!g_ready) return OBBMETA_ERR_NOT_READY;
    const obbmeta_layout *L = obbmeta_layout_of(layout);
    if (!L) return OBBMETA_ERR_LAYOUT;
    if (!batch || !p || !p->palette || p->num_colors <= 0) return OBBMETA_ERR_ARGUMENT;
    p->bad_index = -1;
    p->n_filtered = 0;
    if (L->rect_rotation < 0 && (p->flags & OBBMETA_WRITE_ROTATION)) return OBBMETA_ERR_LAYOUT;
    if ((p->flags & OBBMETA_WRITE_OSD_LIMIT) && p->osd_limit < 0) return OBBMETA_ERR_ARGUMENT;
    if (!obbmeta_pool_matches(L, batch)) return OBBMETA_ERR_POOL_MISMATCH;
    const int single = p->frames == NULL;
    const int64_t single_offsets[2] = {0, p->n};
    const double single_size[2] = {p->frame_width, p->frame_height};
    void *const single_frame[1] = {p->frame};
    void *const *frames = single ? single_frame : p->frames;
    const int64_t *offsets = single ? single_offsets : p->offsets;
    const double *sizes = single ? single_size : p->frame_sizes;
    const int64_t num_frames = single ? 1 : p->num_frames;
    if (!offsets || !sizes || num_frames < 0 || offsets[0] != 0 || offsets[num_frames] != p->n)
        return OBBMETA_ERR_ARGUMENT;
    for (int64_t f = 0; p->regions && f < num_frames; ++f) {
        const double *r = p->regions + 4 * f;
        if (!(r[0] >= 0.0 && r[1] >= 0.0 && r[2] > r[0] && r[3] > r[1] && r[2] <= sizes[2 * f] &&
              r[3] <= sizes[2 * f + 1]))
            return OBBMETA_ERR_ARGUMENT; /* a region inside its frame, with area */
    }
    /* Validate everything before writing anything: an error never leaves a half-written frame. */
    for (int64_t f = 0; f < num_frames; ++f) {
        if (!frames[f] || offsets[f] > offsets[f + 1] || !obbmeta_frame_side_ok(sizes[2 * f]) ||
            !obbmeta_frame_side_ok(sizes[2 * f + 1]))
            return OBBMETA_ERR_ARGUMENT;
        /* Objects come from `batch`'s pools and go back to them when the frame is released: a frame of another
         * batch would hand them to the wrong pools. */
        if (((const obbmeta_base_meta *)frames[f])->batch_meta != batch) return OBBMETA_ERR_FOREIGN_FRAME;
    }
    for (int64_t i = 0; i < p->n; ++i) {
        double aabb[4];
        obb_aabb(p->xywhr + 5 * i, aabb);
        /* rect_params, detector_bbox_info and the payload corners are floats: a box whose bounds leave the float
         * range would be written as inf. */
        const int fits = fabs(aabb[0]) <= FLT_MAX && fabs(aabb[1]) <= FLT_MAX && fabs(aabb[2]) <= FLT_MAX &&
                         fabs(aabb[3]) <= FLT_MAX && aabb[2] - aabb[0] <= FLT_MAX && aabb[3] - aabb[1] <= FLT_MAX;
        if (!obb_is_valid(p->xywhr + 5 * i) || !isfinite(p->scores[i]) || !fits) {
            p->bad_index = i;
            return OBBMETA_ERR_INVALID_BOX;
        }
        const int64_t cls = p->labels[i];
        if (cls < 0 || cls > INT32_MAX || (p->label_text && cls >= p->num_labels)) {
            p->bad_index = i;
            return OBBMETA_ERR_LABEL;
        }
    }
    int64_t total = 0;
    g_api.acquire_meta_lock(batch);
    for (int64_t f = 0; f < num_frames; ++f) {
        const int64_t r = obbmeta_write_frame(L, batch, frames[f], p, offsets[f], offsets[f + 1],
                                              sizes[2 * f], sizes[2 * f + 1], p->regions ? p->regions + 4 * f : NULL,
                                              p->written_mask, &p->n_filtered);
        if (r < 0) {
            total = r;
            break;
        }
        total += r;
    }
    g_api.release_meta_lock(batch);
    return total;
}

/* ---------------------------------------------------------------- display-meta lines */

/* Liang-Barsky: clip segment p0 + t (p1 - p0), t in [0, 1], to [0, w] x [0, h]; 0 when nothing is left. */
static int obbmeta_clip_segment(double *x0, double *y0, double *x1, double *y1, double w, double h)
{
    const double dx = *x1 - *x0, dy = *y1 - *y0;
    const double p[4] = {-dx, dx, -dy, dy};
    const double q[4] = {*x0, w - *x0, *y0, h - *y0};
    double t0 = 0.0, t1 = 1.0;
    for (int k = 0; k < 4; ++k) {
        if (p[k] == 0.0) {
            if (q[k] < 0.0) return 0;
        } else {
            const double t = q[k] / p[k];
            if (p[k] < 0.0) {
                if (t > t1) return 0;
                if (t > t0) t0 = t;
            } else {
                if (t < t0) return 0;
                if (t < t1) t1 = t;
            }
        }
    }
    const double ax = *x0 + t0 * dx, ay = *y0 + t0 * dy, bx = *x0 + t1 * dx, by = *y0 + t1 * dy;
    *x0 = ax;
    *y0 = ay;
    *x1 = bx;
    *y1 = by;
    return 1;
}

/* One NvOSD line from an already clipped segment. */
static void obbmeta_set_line(obbmeta_line_params *lp, double x0, double y0, double x1, double y1, uint32_t width,
                             const double *rgba, double fw, double fh)
{
    lp->x1 = obbmeta_pixel(x0, fw);
    lp->y1 = obbmeta_pixel(y0, fh);
    lp->x2 = obbmeta_pixel(x1, fw);
    lp->y2 = obbmeta_pixel(y1, fh);
    lp->line_width = width;
    obbmeta_set_color(&lp->line_color, rgba);
}

static int64_t obbmeta_lines(const obbmeta_layout *L, void *batch, void *frame, const float *seg, const double *rgba,
                             int64_t m, int64_t num_colors, uint32_t width, double fw, double fh, int64_t *n_display)
{
    obbmeta_display_head *dm = NULL;
    int64_t written = 0;
    for (int64_t i = 0; i < m; ++i) {
        double x0 = seg[4 * i], y0 = seg[4 * i + 1], x1 = seg[4 * i + 2], y1 = seg[4 * i + 3];
        if (!obbmeta_clip_segment(&x0, &y0, &x1, &y1, fw, fh)) continue;
        if (!dm || dm->num_lines >= OBBMETA_MAX_DISPLAY_ELEMENTS) {
            /* nvdsosd does not bound num_lines by 16: a new display meta every 16 lines. */
            dm = (obbmeta_display_head *)g_api.acquire_display_meta(batch);
            g_api.add_display_meta_to_frame(frame, dm);
            ++*n_display;
        }
        obbmeta_set_line(&obbmeta_dm_lines(L, dm)[dm->num_lines++], x0, y0, x1, y1, width,
                         rgba + 4 * (num_colors == 1 ? 0 : i), fw, fh);
        ++written;
    }
    return written;
}

/* Adds m line segments (x1, y1, x2, y2 as floats, pixels) to `frame` as NvDsDisplayMeta lines, 16 per display
 * meta, each clipped to [0, fw] x [0, fh] (segments fully outside are skipped). rgba holds one colour for all
 * (num_colors == 1) or one per segment (num_colors == m). Returns the number of lines written; *n_display gets
 * the number of display metas used. */
OBB_EXPORT int64_t obbmeta_nvds_add_lines(int layout, void *batch, void *frame, const float *seg, int64_t m,
                                          const double *rgba, int64_t num_colors, uint32_t width, double fw,
                                          double fh, int64_t *n_display)
{
    if (!g_ready) return OBBMETA_ERR_NOT_READY;
    const obbmeta_layout *L = obbmeta_layout_of(layout);
    if (!L) return OBBMETA_ERR_LAYOUT;
    if (!batch || !frame || (m > 0 && (!seg || !rgba)) || m < 0 || !n_display || !obbmeta_frame_side_ok(fw) ||
        !obbmeta_frame_side_ok(fh) || (num_colors != 1 && num_colors != m))
        return OBBMETA_ERR_ARGUMENT;
    if (((const obbmeta_base_meta *)frame)->batch_meta != batch) return OBBMETA_ERR_FOREIGN_FRAME;
    if (!obbmeta_display_pool_matches(L, batch)) return OBBMETA_ERR_POOL_MISMATCH;
    for (int64_t i = 0; i < 4 * m; ++i)
        if (!isfinite(seg[i])) {
            *n_display = i / 4;
            return OBBMETA_ERR_INVALID_BOX;
        }
    *n_display = 0;
    g_api.acquire_meta_lock(batch);
    const int64_t r = obbmeta_lines(L, batch, frame, seg, rgba, m, num_colors, width, fw, fh, n_display);
    g_api.release_meta_lock(batch);
    return r;
}

/* ---------------------------------------------------------------- reader */

static void obbmeta_read_object(const obbmeta_layout *L, void *obj, obbmeta_read_row *r)
{
    obbmeta_object_head *o = (obbmeta_object_head *)obj;
    const obbmeta_object_tail *t = obbmeta_tail(L, obj);
    r->address = (uint64_t)(uintptr_t)obj;
    r->parent = (uint64_t)(uintptr_t)o->parent;
    r->object_id = o->object_id;
    r->class_id = o->class_id;
    r->component_id = o->unique_component_id;
    r->confidence = o->confidence;
    r->tracker_confidence = o->tracker_confidence;
    r->rect[0] = o->rect_params.left;
    r->rect[1] = o->rect_params.top;
    r->rect[2] = o->rect_params.width;
    r->rect[3] = o->rect_params.height;
    r->detector_bbox[0] = o->detector_bbox.left;
    r->detector_bbox[1] = o->detector_bbox.top;
    r->detector_bbox[2] = o->detector_bbox.width;
    r->detector_bbox[3] = o->detector_bbox.height;
    r->tracker_bbox[0] = o->tracker_bbox.left;
    r->tracker_bbox[1] = o->tracker_bbox.top;
    r->tracker_bbox[2] = o->tracker_bbox.width;
    r->tracker_bbox[3] = o->tracker_bbox.height;
    const float *rotation = obbmeta_rotation(L, &o->rect_params);
    r->rotation_angle = rotation ? *rotation : 0.0f;
    /* Up to the first NUL only: a pool element reused for a shorter label still holds the old one's tail. */
    const char *nul = (const char *)memchr(t->obj_label, '\0', OBBMETA_MAX_LABEL - 1);
    const size_t label_len = nul ? (size_t)(nul - t->obj_label) : OBBMETA_MAX_LABEL - 1;
    memcpy(r->label, t->obj_label, label_len);
    memset(r->label + label_len, 0, OBBMETA_MAX_LABEL - label_len);
    const obbmeta_obb_v1 *found = NULL;
    int32_t count = 0;
    for (const obbmeta_glist *l = t->obj_user_meta_list; l; l = l->next) {
        const obbmeta_user_meta *um = (const obbmeta_user_meta *)l->data;
        ++count;
        if (!found && um && um->base.meta_type == g_obb_meta_type && um->user_meta_data) {
            const obbmeta_obb_v1 *c = (const obbmeta_obb_v1 *)um->user_meta_data;
            if (c->version >= OBBMETA_OBB_VERSION && c->struct_size >= sizeof(obbmeta_obb_v1)) found = c;
        }
    }
    r->num_user_meta = count;
    float b[5];
    if (found) {
        r->source = (found->flags & OBBMETA_OBB_PREDICTED) ? OBBMETA_SOURCE_PREDICTED : OBBMETA_SOURCE_USER_META;
        b[0] = found->cx;
        b[1] = found->cy;
        b[2] = found->w;
        b[3] = found->h;
        b[4] = found->angle;
        r->obb_flags = found->flags;
    } else {
        const int rotated = fabsf(r->rotation_angle) > 1e-3f;
        r->source = rotated ? OBBMETA_SOURCE_ROTATION : OBBMETA_SOURCE_AABB;
        b[0] = r->rect[0] + 0.5f * r->rect[2];
        b[1] = r->rect[1] + 0.5f * r->rect[3];
        b[2] = r->rect[2];
        b[3] = r->rect[3];
        b[4] = rotated ? (float)((double)r->rotation_angle * (OBBMETA_PI / 180.0)) : 0.0f;
        r->obb_flags = rotated ? OBBMETA_OBB_RECT_ROTATED : 0u;
    }
    memcpy(r->xywhr, b, sizeof b);
    if (found) {
        memcpy(r->corners, found->corners, sizeof r->corners);
    } else {
        double c8[8];
        obb_corners(b, c8);
        for (int k = 0; k < 8; ++k) r->corners[k] = (float)c8[k];
    }
}

/* Fills up to `capacity` rows in obj_meta_list order and returns the number of objects in the frame (more than
 * `capacity`: call again with room for that many). The list is walked under the lock of the frame's own batch
 * (base_meta.batch_meta, which NVIDIA sets on every frame meta), so a concurrent writer cannot change it. */
OBB_EXPORT int64_t obbmeta_nvds_read(int layout, void *frame, obbmeta_read_row *rows, int64_t capacity)
{
    const obbmeta_layout *L = obbmeta_layout_of(layout);
    if (!L) return OBBMETA_ERR_LAYOUT;
    if (!frame) return OBBMETA_ERR_ARGUMENT;
    void *batch = ((const obbmeta_frame_meta_head *)frame)->base.batch_meta;
    if (batch) g_api.acquire_meta_lock(batch);
    int64_t n = 0;
    for (const obbmeta_glist *l = ((const obbmeta_frame_meta_head *)frame)->obj_meta_list; l; l = l->next, ++n) {
        if (n >= capacity) continue;
        memset(&rows[n], 0, sizeof(obbmeta_read_row));
        obbmeta_read_object(L, l->data, &rows[n]);
    }
    if (batch) g_api.release_meta_lock(batch);
    return n;
}

/* ---------------------------------------------------------------- OBB overlay for nvdsosd */

/* The label anchor: the top-most corner (smallest y; of two at the same height, the left one, so that an
 * un-rotated box gets its label at the top-left corner, where nvinfer puts it). */
static int obbmeta_top_vertex(const float c[8])
{
    int best = 0;
    for (int k = 1; k < 4; ++k)
        if (c[2 * k + 1] < c[2 * best + 1] || (c[2 * k + 1] == c[2 * best + 1] && c[2 * k] < c[2 * best])) best = k;
    return best;
}

/* A display meta of ours from the pool: marked, added to the frame (taken when the current one has no room for
 * one more element of a kind; nvdsosd does not bound num_* by 16). */
static obbmeta_display_head *obbmeta_overlay_meta(const obbmeta_layout *L, void *batch, void *frame,
                                                  obbmeta_overlay_params *p)
{
    obbmeta_display_head *dm = (obbmeta_display_head *)g_api.acquire_display_meta(batch);
    obbmeta_dm_misc(L, dm)[OBBMETA_OVERLAY_MARK_SLOT] = OBBMETA_OVERLAY_MARK;
    g_api.add_display_meta_to_frame(frame, dm);
    ++p->display_metas;
    return dm;
}

/* One frame; the caller holds the batch lock. */
static void obbmeta_overlay(const obbmeta_layout *L, void *batch, void *frame, obbmeta_overlay_params *p)
{
    obbmeta_frame_meta_head *fm = (obbmeta_frame_meta_head *)frame;
    /* A previous overlay (also one copied with the batch: the mark is copied with the struct) goes back to the
     * pool, so that repeated calls replace rather than add. */
    for (obbmeta_glist *l = fm->display_meta_list, *next; l; l = next) {
        next = l->next;
        if (l->data && obbmeta_dm_misc(L, l->data)[OBBMETA_OVERLAY_MARK_SLOT] == OBBMETA_OVERLAY_MARK) {
            g_api.remove_display_meta_from_frame(frame, l->data);
            ++p->removed;
        }
    }
    if (p->flags & OBBMETA_OVERLAY_REMOVE_ONLY) return;
    const double fw = p->frame_width, fh = p->frame_height;
    obbmeta_display_head *dm = NULL;
    obbmeta_read_row row;
    for (obbmeta_glist *l = fm->obj_meta_list; l; l = l->next) {
        obbmeta_object_head *o = (obbmeta_object_head *)l->data;
        obbmeta_object_tail *t = obbmeta_tail(L, o);
        ++p->objects;
        obbmeta_read_object(L, o, &row);
        if (row.source == OBBMETA_SOURCE_AABB) {
            ++p->skipped;
            continue;
        }
        const double *rgba = obbmeta_palette_color(p->palette, p->num_colors, o->class_id);
        int any = 0;
        if (p->flags & OBBMETA_OVERLAY_NATIVE) {
            double aabb[4];
            obb_aabb(row.xywhr, aabb);
            const double whole[4] = {0.0, 0.0, fw, fh};
            if (obbmeta_box_meets_region(row.xywhr, aabb, whole)) {
                if (!dm || dm->num_rects >= OBBMETA_MAX_DISPLAY_ELEMENTS) dm = obbmeta_overlay_meta(L, batch, frame, p);
                /* nvdsosd rotates the rect around its centre: the un-rotated box, unclipped. */
                obbmeta_rect_head *r = obbmeta_dm_rect(L, dm, dm->num_rects++);
                double ur[4];
                obbmeta_unrotated_rect(row.xywhr, ur);
                r->left = (float)ur[0];
                r->top = (float)ur[1];
                r->width = (float)ur[2];
                r->height = (float)ur[3];
                r->border_width = p->line_width;
                obbmeta_set_color(&r->border_color, rgba);
                float *rotation = obbmeta_rotation(L, r); /* the entry point refuses this mode without one */
                if (rotation) *rotation = obbmeta_degrees(row.xywhr[4]);
                ++p->rects;
                any = 1;
            }
        } else {
            for (int k = 0; k < 4; ++k) {
                const int j = (k + 1) & 3;
                double x0 = row.corners[2 * k], y0 = row.corners[2 * k + 1];
                double x1 = row.corners[2 * j], y1 = row.corners[2 * j + 1];
                if (!obbmeta_clip_segment(&x0, &y0, &x1, &y1, fw, fh)) continue;
                if (!dm || dm->num_lines >= OBBMETA_MAX_DISPLAY_ELEMENTS) dm = obbmeta_overlay_meta(L, batch, frame, p);
                obbmeta_set_line(&obbmeta_dm_lines(L, dm)[dm->num_lines++], x0, y0, x1, y1, p->line_width, rgba, fw,
                                 fh);
                ++p->lines;
                any = 1;
            }
        }
        if (any)
            ++p->drawn;
        else
            ++p->outside;
        if (p->flags & OBBMETA_OVERLAY_HIDE_AABB) {
            o->rect_params.border_width = 0;
            ++p->hidden;
        }
        if ((p->flags & OBBMETA_OVERLAY_LABEL) && t->text_params.display_text) {
            const int v = obbmeta_top_vertex(row.corners);
            t->text_params.x_offset = obbmeta_pixel(row.corners[2 * v], fw);
            t->text_params.y_offset = obbmeta_pixel(row.corners[2 * v + 1] - OBBMETA_LABEL_RISE, fh);
            ++p->labels;
        }
    }
}

/* Draws every object of `frame` that has an OBB (obbmeta's payload or a DS 9 rotation_angle) for nvdsosd: its
 * 4 edges as display-meta lines (clipped to the frame, unsigned pixels), or with OBBMETA_OVERLAY_NATIVE (DS 9)
 * one display-meta rect with rotation_angle; after removing this function's previous display metas from the
 * frame. Objects with only rect_params are counted in p->skipped. Returns 0 or a negative OBBMETA_ERR_*. */
OBB_EXPORT int64_t obbmeta_nvds_overlay(int layout, void *batch, void *frame, obbmeta_overlay_params *p)
{
    if (!g_ready) return OBBMETA_ERR_NOT_READY;
    const obbmeta_layout *L = obbmeta_layout_of(layout);
    if (!L) return OBBMETA_ERR_LAYOUT;
    if (!batch || !frame || !p || !p->palette || p->num_colors <= 0 || !obbmeta_frame_side_ok(p->frame_width) ||
        !obbmeta_frame_side_ok(p->frame_height))
        return OBBMETA_ERR_ARGUMENT;
    if (L->rect_rotation < 0 && (p->flags & OBBMETA_OVERLAY_NATIVE)) return OBBMETA_ERR_LAYOUT;
    if (((const obbmeta_base_meta *)frame)->batch_meta != batch) return OBBMETA_ERR_FOREIGN_FRAME;
    if (!obbmeta_pool_matches(L, batch) || !obbmeta_display_pool_matches(L, batch)) return OBBMETA_ERR_POOL_MISMATCH;
    p->objects = p->drawn = p->skipped = p->outside = p->lines = p->rects = 0;
    p->display_metas = p->removed = p->labels = p->hidden = 0;
    g_api.acquire_meta_lock(batch);
    obbmeta_overlay(L, batch, frame, p);
    g_api.release_meta_lock(batch);
    return OBBMETA_OK;
}

/* ---------------------------------------------------------------- track results onto existing objects */

/* The OBB payload in an object's user-meta list (obbmeta's type, a version we know), or NULL. */
static obbmeta_obb_v1 *obbmeta_find_payload(obbmeta_glist *list)
{
    for (obbmeta_glist *l = list; l; l = l->next) {
        obbmeta_user_meta *um = (obbmeta_user_meta *)l->data;
        if (um && um->base.meta_type == g_obb_meta_type && um->user_meta_data) {
            obbmeta_obb_v1 *c = (obbmeta_obb_v1 *)um->user_meta_data;
            if (c->version >= OBBMETA_OBB_VERSION && c->struct_size >= sizeof(obbmeta_obb_v1)) return c;
        }
    }
    return NULL;
}

/* One object; the caller holds the batch lock and has validated the entry. Returns 1 when it added a payload. */
static int obbmeta_update(const obbmeta_layout *L, void *batch, void *obj, const obbmeta_update_params *p, int64_t i)
{
    obbmeta_object_head *o = (obbmeta_object_head *)obj;
    const float *b = p->xywhr ? p->xywhr + 5 * i : NULL;
    uint32_t rect_bits = 0;
    if (p->flags & OBBMETA_UPDATE_OBJECT_ID) o->object_id = p->object_ids[i];
    if (p->flags & OBBMETA_UPDATE_CONFIDENCE) o->confidence = p->confidence[i];
    if (p->flags & OBBMETA_UPDATE_TRACKER_CONFIDENCE) o->tracker_confidence = p->tracker_confidence[i];
    if (p->flags & OBBMETA_UPDATE_RECT) {
        /* What nvtracker does with its own box: the clipped box in rect_params, the unclipped one in
         * tracker_bbox_info. A box outside the frame gets an empty rect at the nearest edge. */
        double aabb[4];
        obb_aabb(b, aabb);
        const double fw = p->frame_width, fh = p->frame_height;
        double x1 = aabb[0] > 0.0 ? aabb[0] : 0.0, y1 = aabb[1] > 0.0 ? aabb[1] : 0.0;
        double x2 = aabb[2] < fw ? aabb[2] : fw, y2 = aabb[3] < fh ? aabb[3] : fh;
        if (x1 > fw) x1 = fw;
        if (y1 > fh) y1 = fh;
        if (x2 < x1) x2 = x1;
        if (y2 < y1) y2 = y1;
        if (x1 != aabb[0] || y1 != aabb[1] || x2 != aabb[2] || y2 != aabb[3]) rect_bits = OBBMETA_OBB_RECT_CLIPPED;
        o->rect_params.left = (float)x1;
        o->rect_params.top = (float)y1;
        o->rect_params.width = (float)(x2 - x1);
        o->rect_params.height = (float)(y2 - y1);
        float *rotation = obbmeta_rotation(L, &o->rect_params);
        if (rotation) *rotation = 0.0f;
        o->tracker_bbox.left = (float)aabb[0];
        o->tracker_bbox.top = (float)aabb[1];
        o->tracker_bbox.width = (float)(aabb[2] - aabb[0]);
        o->tracker_bbox.height = (float)(aabb[3] - aabb[1]);
    }
    if ((p->flags & OBBMETA_UPDATE_ROTATION) && !isnan(p->rotation_angle[i]))
        *obbmeta_rotation(L, &o->rect_params) = p->rotation_angle[i]; /* the entry point refuses it without one */
    if (!(p->flags & OBBMETA_UPDATE_OBB)) return 0;
    obbmeta_obb_v1 *obb = obbmeta_find_payload(obbmeta_tail(L, obj)->obj_user_meta_list);
    const int added = obb == NULL;
    if (obb) {
        /* rect_params' bits stay true of rect_params unless this call rewrote it. */
        if (!(p->flags & OBBMETA_UPDATE_RECT))
            rect_bits = obb->flags & (OBBMETA_OBB_RECT_CLIPPED | OBBMETA_OBB_RECT_ROTATED);
    } else {
        obb = obbmeta_add_payload(batch, obj);
    }
    obbmeta_set_payload(obb, b, rect_bits | (p->obb_flags[i] & (OBBMETA_OBB_PREDICTED | OBBMETA_OBB_TRACKED)));
    return added;
}

typedef struct {
    uint64_t address;
    int64_t index;
} obbmeta_addr_index;

static int obbmeta_addr_compare(const void *pa, const void *pb)
{
    const uint64_t a = ((const obbmeta_addr_index *)pa)->address, b = ((const obbmeta_addr_index *)pb)->address;
    return (a > b) - (a < b);
}

/* The n entries' object addresses with their indices, sorted for bsearch (g_malloc'd; the caller frees it). An object
 * named twice gives OBBMETA_ERR_ARGUMENT with the later entry in *bad_index. */
static int64_t obbmeta_sort_objects(const uint64_t *objects, int64_t n, obbmeta_addr_index **out, int64_t *bad_index)
{
    obbmeta_addr_index *sorted = (obbmeta_addr_index *)g_api.g_malloc(sizeof(obbmeta_addr_index) * (size_t)n);
    for (int64_t i = 0; i < n; ++i) {
        sorted[i].address = objects[i];
        sorted[i].index = i;
    }
    qsort(sorted, (size_t)n, sizeof *sorted, obbmeta_addr_compare);
    *out = sorted;
    for (int64_t i = 1; i < n; ++i)
        if (sorted[i].address == sorted[i - 1].address) {
            *bad_index = sorted[i].index > sorted[i - 1].index ? sorted[i].index : sorted[i - 1].index;
            return OBBMETA_ERR_ARGUMENT;
        }
    return OBBMETA_OK;
}

/* frame_of[i] = frame for every entry i whose object is in frame's object list (the meta lock held). */
static void obbmeta_find_in_frame(void *frame, const obbmeta_addr_index *sorted, int64_t n, void **frame_of)
{
    for (const obbmeta_glist *l = ((const obbmeta_frame_meta_head *)frame)->obj_meta_list; l; l = l->next) {
        const obbmeta_addr_index key = {(uint64_t)(uintptr_t)l->data, 0};
        const obbmeta_addr_index *hit =
            (const obbmeta_addr_index *)bsearch(&key, sorted, (size_t)n, sizeof *sorted, obbmeta_addr_compare);
        if (hit) frame_of[hit->index] = frame;
    }
}

/* OBBMETA_ERR_FOREIGN_FRAME with the first entry found in no frame in *bad_index, else OBBMETA_OK. */
static int64_t obbmeta_all_found(void *const *frame_of, int64_t n, int64_t *bad_index)
{
    for (int64_t i = 0; i < n; ++i)
        if (!frame_of[i]) {
            *bad_index = i;
            return OBBMETA_ERR_FOREIGN_FRAME;
        }
    return OBBMETA_OK;
}

/* Writes track results onto objects already in `frame` (what a tracker does to the objects it keeps): per
 * p->flags the OBB payload (replaced in place, or added with obbmeta's copy / release functions when the object
 * has none, e.g. an object nvtracker made itself), object_id, rect_params + tracker_bbox_info, confidence,
 * tracker_confidence, rect_params.rotation_angle (DS 9; OBBMETA_ERR_LAYOUT without it). Every p->objects[i] must be an object meta of `frame`, each once, and every box valid;
 * otherwise nothing is written, the result is negative and p->bad_index names the entry. Returns 0. */
OBB_EXPORT int64_t obbmeta_nvds_update_objects(int layout, void *batch, void *frame, obbmeta_update_params *p)
{
    if (!g_ready) return OBBMETA_ERR_NOT_READY;
    const obbmeta_layout *L = obbmeta_layout_of(layout);
    if (!L) return OBBMETA_ERR_LAYOUT;
    if (!batch || !frame || !p || p->n < 0) return OBBMETA_ERR_ARGUMENT;
    p->bad_index = -1;
    p->added = 0;
    const int32_t f = p->flags;
    if (p->n > 0 && (!p->objects || ((f & (OBBMETA_UPDATE_OBB | OBBMETA_UPDATE_RECT)) && !p->xywhr) ||
                     ((f & OBBMETA_UPDATE_OBB) && !p->obb_flags) || ((f & OBBMETA_UPDATE_OBJECT_ID) && !p->object_ids) ||
                     ((f & OBBMETA_UPDATE_CONFIDENCE) && !p->confidence) ||
                     ((f & OBBMETA_UPDATE_TRACKER_CONFIDENCE) && !p->tracker_confidence) ||
                     ((f & OBBMETA_UPDATE_ROTATION) && !p->rotation_angle)))
        return OBBMETA_ERR_ARGUMENT;
    if ((f & OBBMETA_UPDATE_ROTATION) && L->rect_rotation < 0) return OBBMETA_ERR_LAYOUT;
    if ((f & OBBMETA_UPDATE_RECT) && (!(p->frame_width > 0.0) || !(p->frame_height > 0.0))) return OBBMETA_ERR_ARGUMENT;
    if (((const obbmeta_base_meta *)frame)->batch_meta != batch) return OBBMETA_ERR_FOREIGN_FRAME;
    if (!obbmeta_pool_matches(L, batch)) return OBBMETA_ERR_POOL_MISMATCH;
    if (p->n == 0) return OBBMETA_OK;
    if (f & (OBBMETA_UPDATE_OBB | OBBMETA_UPDATE_RECT))
        for (int64_t i = 0; i < p->n; ++i)
            if (!obb_is_valid(p->xywhr + 5 * i)) {
                p->bad_index = i;
                return OBBMETA_ERR_INVALID_BOX;
            }
    /* Every entry must name an object of this frame, once: sort the addresses, then walk the frame's list. */
    obbmeta_addr_index *sorted = NULL;
    void **seen = (void **)g_api.g_malloc(sizeof(void *) * (size_t)p->n);
    memset(seen, 0, sizeof(void *) * (size_t)p->n);
    int64_t rc = obbmeta_sort_objects(p->objects, p->n, &sorted, &p->bad_index);
    g_api.acquire_meta_lock(batch);
    if (rc == OBBMETA_OK) {
        obbmeta_find_in_frame(frame, sorted, p->n, seen);
        rc = obbmeta_all_found(seen, p->n, &p->bad_index);
    }
    if (rc == OBBMETA_OK) {
        for (int64_t i = 0; i < p->n; ++i) p->added += obbmeta_update(L, batch, (void *)(uintptr_t)p->objects[i], p, i);
    }
    g_api.release_meta_lock(batch);
    g_api.g_free(seen);
    g_api.g_free(sorted);
    return rc;
}

/* ---------------------------------------------------------------- secondary results: NvDsClassifierMeta /
 * NvDsLabelInfo, written where nvinfer's secondary mode writes them (gst-nvinfer attach_metadata_classifier). */

static obbmeta_classifier_api g_cls_api;
static int g_cls_ready = 0;

OBB_EXPORT int32_t obbmeta_nvds_init_classifier(const obbmeta_classifier_api *api)
{
    if (!api || !api->acquire_classifier_meta || !api->add_classifier_meta_to_object || !api->acquire_label_info ||
        !api->add_label_info_to_classifier)
        return OBBMETA_ERR_ARGUMENT;
    g_cls_api = *api;
    g_cls_ready = 1;
    return OBBMETA_OK;
}

/* sizeof / offsetof of the classifier structs, for the ctypes mirror's check (obbmeta.nvds._core). */
OBB_EXPORT int obbmeta_nvds_classifier_layout_info(int64_t *out, int n)
{
    if (n < 12) return OBBMETA_ERR_ARGUMENT;
    out[0] = sizeof(obbmeta_classifier_meta);
    out[1] = offsetof(obbmeta_classifier_meta, num_labels);
    out[2] = offsetof(obbmeta_classifier_meta, unique_component_id);
    out[3] = offsetof(obbmeta_classifier_meta, label_info_list);
    out[4] = offsetof(obbmeta_classifier_meta, classifier_type);
    out[5] = sizeof(obbmeta_label_info);
    out[6] = offsetof(obbmeta_label_info, num_classes);
    out[7] = offsetof(obbmeta_label_info, result_label);
    out[8] = offsetof(obbmeta_label_info, pResult_label);
    out[9] = offsetof(obbmeta_label_info, result_class_id);
    out[10] = offsetof(obbmeta_label_info, label_id);
    out[11] = offsetof(obbmeta_label_info, result_prob);
    return OBBMETA_OK;
}

/* What nvinfer does with the label string of a classified object: when the object has no display_text yet, give
 * it one (above the rect's top-left corner, nvinfer's font and black background); then display_text += " " +
 * the labels. `add` holds add_len bytes (no NUL). The caller holds the batch lock. */
static void obbmeta_append_display_text(const obbmeta_layout *L, void *o, const char *add, size_t add_len)
{
    obbmeta_text_params *t = &obbmeta_tail(L, o)->text_params;
    size_t old = 0;
    if (t->display_text) {
        old = strlen(t->display_text);
    } else {
        const obbmeta_rect_head *r = &((const obbmeta_object_head *)o)->rect_params;
        obbmeta_label_style(t, obbmeta_pixel(r->left, OBBMETA_MAX_FRAME_SIDE),
                            obbmeta_pixel((double)r->top - OBBMETA_LABEL_RISE, OBBMETA_MAX_FRAME_SIDE), 11);
    }
    char *s = (char *)g_api.g_malloc(old + 1 + add_len + 1);
    if (old) memcpy(s, t->display_text, old);
    s[old] = ' ';
    memcpy(s + old + 1, add, add_len);
    s[old + 1 + add_len] = '\0';
    if (t->display_text) g_api.g_free(t->display_text);
    t->display_text = s; /* g_malloc'd: NVIDIA's object release g_frees it */
}

/* One object's labels [begin, end) as one NvDsClassifierMeta; the caller holds the batch lock and validated
 * everything. Returns the labels that needed pResult_label. */
static int64_t obbmeta_classify_object(const obbmeta_layout *L, void *batch, void *o, const obbmeta_classify_params *p,
                                       int64_t begin, int64_t end, char *joined)
{
    int64_t long_labels = 0;
    size_t joined_len = 0;
    obbmeta_classifier_meta *cm = (obbmeta_classifier_meta *)g_cls_api.acquire_classifier_meta(batch);
    cm->unique_component_id = p->component_id;
    cm->classifier_type = p->classifier_type;
    for (int64_t k = begin; k < end; ++k) {
        obbmeta_label_info *li = (obbmeta_label_info *)g_cls_api.acquire_label_info(batch);
        const char *text = p->text + p->text_start[k];
        const size_t len = (size_t)p->text_len[k], cut = (size_t)p->cut_len[k];
        li->num_classes = p->num_classes[k];
        li->result_class_id = p->class_ids[k];
        li->label_id = p->label_ids[k];
        li->result_prob = p->probs[k];
        memcpy(li->result_label, text, cut);
        li->result_label[cut] = '\0';
        if (cut < len) {
            /* Too long for result_label (which keeps its cut prefix for readers of the array, e.g. nvmsgconv):
             * the whole label in pResult_label, which NVIDIA's release of the label info g_frees. */
            li->pResult_label = (char *)g_api.g_malloc(len + 1);
            memcpy(li->pResult_label, text, len);
            li->pResult_label[len] = '\0';
            ++long_labels;
        }
        /* nvinfer adds its labels in output order with NVIDIA's add function, which prepends: the list ends up in
         * reverse label order; doing the same keeps readers that depend on it working. */
        g_cls_api.add_label_info_to_classifier(cm, li);
        if (joined && len) {
            if (joined_len) joined[joined_len++] = ' ';
            memcpy(joined + joined_len, text, len);
            joined_len += len;
        }
    }
    g_cls_api.add_classifier_meta_to_object(o, cm);
    if (joined && joined_len) obbmeta_append_display_text(L, o, joined, joined_len);
    return long_labels;
}

/* Writes, for every p->objects[i] with at least one label, one NvDsClassifierMeta (unique_component_id,
 * classifier_type) holding its NvDsLabelInfo entries (label_id, result_class_id, result_prob, num_classes,
 * result_label cut to 127 bytes, pResult_label when cut), with NVIDIA's acquire / add functions, under the batch
 * lock; sets bInferDone on every frame of the given objects; with OBBMETA_CLASSIFY_TEXT appends the labels to
 * display_text. Every object must be an object meta in a frame of `batch`, each once, and every label well
 * formed; otherwise nothing is written, the result is negative and p->bad_index names the object. Returns the
 * number of classifier metas written. */
OBB_EXPORT int64_t obbmeta_nvds_classify(int layout, void *batch, obbmeta_classify_params *p)
{
    if (!g_ready || !g_cls_ready) return OBBMETA_ERR_NOT_READY;
    const obbmeta_layout *L = obbmeta_layout_of(layout);
    if (!L) return OBBMETA_ERR_LAYOUT;
    if (!batch || !p || p->n < 0 || p->num_labels < 0) return OBBMETA_ERR_ARGUMENT;
    p->bad_index = -1;
    p->classifier_metas = p->labels = p->long_labels = p->frames = 0;
    if (p->n > 0 && (!p->objects || !p->label_offsets)) return OBBMETA_ERR_ARGUMENT;
    if (p->num_labels > 0 && (!p->label_ids || !p->class_ids || !p->probs || !p->num_classes || !p->text ||
                              !p->text_start || !p->text_len || !p->cut_len))
        return OBBMETA_ERR_ARGUMENT;
    if (p->n > 0 && (p->label_offsets[0] != 0 || p->label_offsets[p->n] != p->num_labels)) return OBBMETA_ERR_ARGUMENT;
    if (p->n == 0 && p->num_labels != 0) return OBBMETA_ERR_ARGUMENT;
    for (int64_t i = 0; i < p->n; ++i)
        if (p->label_offsets[i] > p->label_offsets[i + 1]) return OBBMETA_ERR_ARGUMENT;
    size_t longest = 0; /* the longest object's labels joined with spaces, for the display text */
    for (int64_t i = 0; i < p->n; ++i) {
        size_t joined = 0;
        for (int64_t k = p->label_offsets[i]; k < p->label_offsets[i + 1]; ++k) {
            const int64_t start = p->text_start[k], len = p->text_len[k], cut = p->cut_len[k];
            /* A label that fits is copied whole; a longer one is cut within the last UTF-8 character's reach
             * (at most 3 bytes short of 127) and never inside a character. */
            int ok = start >= 0 && len >= 0 && memchr(p->text + start, '\0', (size_t)len) == NULL &&
                     isfinite(p->probs[k]);
            if (ok && len <= OBBMETA_MAX_LABEL - 1)
                ok = cut == len;
            else if (ok)
                ok = cut >= OBBMETA_MAX_LABEL - 4 && cut <= OBBMETA_MAX_LABEL - 1 &&
                     ((unsigned char)p->text[start + cut] & 0xC0u) != 0x80u;
            if (!ok) {
                p->bad_index = i;
                return OBBMETA_ERR_ARGUMENT;
            }
            joined += (size_t)p->text_len[k] + 1;
        }
        if (joined > longest) longest = joined;
    }
    const obbmeta_batch_meta_head *bm = (const obbmeta_batch_meta_head *)batch;
    if (!obbmeta_pool_matches(L, batch) || !bm->classifier_meta_pool || !bm->label_info_meta_pool ||
        bm->classifier_meta_pool->element_size != (uint32_t)sizeof(obbmeta_classifier_meta) ||
        bm->label_info_meta_pool->element_size != (uint32_t)sizeof(obbmeta_label_info))
        return OBBMETA_ERR_POOL_MISMATCH;
    if (p->n == 0) return OBBMETA_OK;
    /* Every entry must name an object of this batch, once: sort the addresses, then walk every frame's list. */
    obbmeta_addr_index *sorted = NULL;
    void **frame_of = (void **)g_api.g_malloc(sizeof(void *) * (size_t)p->n);
    memset(frame_of, 0, sizeof(void *) * (size_t)p->n);
    int64_t rc = obbmeta_sort_objects(p->objects, p->n, &sorted, &p->bad_index);
    char *joined = (p->flags & OBBMETA_CLASSIFY_TEXT) ? (char *)g_api.g_malloc(longest + 1) : NULL;
    g_api.acquire_meta_lock(batch);
    if (rc == OBBMETA_OK) {
        for (const obbmeta_glist *fl = bm->frame_meta_list; fl; fl = fl->next)
            obbmeta_find_in_frame(fl->data, sorted, p->n, frame_of);
        rc = obbmeta_all_found(frame_of, p->n, &p->bad_index);
    }
    if (rc == OBBMETA_OK) {
        for (int64_t i = 0; i < p->n; ++i) {
            void *o = (void *)(uintptr_t)p->objects[i];
            const int64_t begin = p->label_offsets[i], end = p->label_offsets[i + 1];
            obbmeta_frame_meta_head *f = (obbmeta_frame_meta_head *)frame_of[i];
            /* nvinfer marks the frame of every object it processed, found something or not. */
            if (!f->infer_done) {
                f->infer_done = 1;
                ++p->frames;
            }
            if (begin == end) continue;
            p->long_labels += obbmeta_classify_object(L, batch, o, p, begin, end, joined);
            ++p->classifier_metas;
            p->labels += end - begin;
        }
    }
    g_api.release_meta_lock(batch);
    if (joined) g_api.g_free(joined);
    g_api.g_free(frame_of);
    g_api.g_free(sorted);
    return rc == OBBMETA_OK ? p->classifier_metas : rc;
}

/* ---------------------------------------------------------------- what Python checks at load
 * obbmeta/nvds/_core.py (NVDS_META, an obbmeta._native.NativeLibrary) mirrors the parameter structs and flags of
 * nvds_meta.h in ctypes. At load it compares them with this table: `names[i]` is "T" for sizeof(T), "T.f" for
 * offsetof(T, f) (the function tables whole, elsewhere the fields whose shift would go unnoticed: what the writers
 * report back, and a few inputs after fields of another size), else a constant, with its value in `values[i]`.
 * Writes at most `capacity` entries and returns how many there are. The ABI version changes when an entry point's
 * signature does. */
OBB_EXPORT int obbmeta_nvds_abi_version(void) { return 4; }

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
