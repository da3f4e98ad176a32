/* obbmeta: what nvmsgconv reads, with the C copy / release functions DeepStream calls on tee / queue copies and on
 * buffer release:
 *   - the frame-level message blob (NVDS_CUSTOM_MSG_BLOB user meta holding an NvDsCustomMsgInfo
 *     {void *message; guint size;}), read with msg2p-newapi=1;
 *   - per object, an NVDS_EVENT_MSG_META user meta holding an NvDsEventMsgMeta (the older path, msg2p-newapi=0),
 *     whose objSignature carries the rotated box (13 doubles, obbmeta/nvds/messages.py: obb_signature).
 *
 * nvmsgconv (msg2p-newapi=1, DeepStream 7.1 - 9.x sources) walks frame_user_meta_list, takes every user meta whose
 * meta_type is NVDS_CUSTOM_MSG_BLOB and adds `string(message, size)` to the payload's "customMessage" array.
 * NVDS_CUSTOM_MSG_BLOB is positional in NvDsMetaType (29 in the 8.0 and 9.0 / 9.1 headers), so the type is an
 * argument here, chosen in Python (obbmeta/nvds/messages.py).
 *
 * Like nvds_meta.c, NVIDIA's and glib's functions come in a table filled from the ctypes handles of the library
 * obbmeta's loader chose; nothing here includes a DeepStream or glib header. Own file and library so that it
 * builds and loads independently of the OBB writer.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "obb_abi.h"

#define OBB_EXPORT __attribute__((visibility("default")))
#define OBBMETA_NVDS_USER_META 7 /* what NVIDIA's user-meta pool stamps on its elements */

typedef void *(*obbmsg_copy_fn)(void *data, void *user_data);
typedef void (*obbmsg_release_fn)(void *data, void *user_data);

typedef struct { /* NvDsBaseMeta */
    void *batch_meta;
    int32_t meta_type;
    void *user_context;
    obbmsg_copy_fn copy_func;
    obbmsg_release_fn release_func;
} obbmsg_base_meta;

typedef struct { /* NvDsUserMeta */
    obbmsg_base_meta base;
    void *user_meta_data;
} obbmsg_user_meta;

typedef struct { /* NvDsCustomMsgInfo (nvdsmeta_schema.h, 7.1 - 9.x): message, size in bytes */
    void *message;
    uint32_t size;
} obbmsg_custom_msg_info;

typedef struct {
    void *(*acquire_user_meta)(void *batch);
    void (*add_user_meta_to_frame)(void *frame, void *user);
    void (*acquire_meta_lock)(void *batch);
    void (*release_meta_lock)(void *batch);
    void *(*g_malloc)(size_t n);
    void (*g_free)(void *p);
} obbmsg_api;

static obbmsg_api g_api;
static int g_ready = 0;
/* Blobs written or copied and not yet released: a leak check for tests and pipelines. */
static int64_t g_live_blobs = 0;

/* A g_malloc'd NvDsCustomMsgInfo with a g_malloc'd copy of `size` bytes (plus a NUL that `size` does not count,
 * so a C reader may also treat the message as a string). */
static obbmsg_custom_msg_info *obbmsg_new_info(const void *message, uint32_t size)
{
    obbmsg_custom_msg_info *info = (obbmsg_custom_msg_info *)g_api.g_malloc(sizeof(obbmsg_custom_msg_info));
    char *text = (char *)g_api.g_malloc((size_t)size + 1);
    if (size) memcpy(text, message, size);
    text[size] = '\0';
    info->message = text;
    info->size = size;
    __atomic_add_fetch(&g_live_blobs, 1, __ATOMIC_RELAXED);
    return info;
}

/* The user-meta pool hands elements out again without clearing them: a release leaves nothing of ours behind. */
static void obbmsg_hand_back(obbmsg_user_meta *um)
{
    um->user_meta_data = NULL;
    um->base.copy_func = NULL;
    um->base.release_func = NULL;
    um->base.meta_type = OBBMETA_NVDS_USER_META;
}

/* DeepStream calls copy / release with the NvDsUserMeta* as `data` (nvds_copy / nvds_clear_meta_list). */
OBB_EXPORT void *obbmeta_msg_blob_copy(void *data, void *user_data)
{
    (void)user_data;
    const obbmsg_user_meta *src = (const obbmsg_user_meta *)data;
    if (!src || !src->user_meta_data || !g_ready) return NULL;
    const obbmsg_custom_msg_info *info = (const obbmsg_custom_msg_info *)src->user_meta_data;
    return obbmsg_new_info(info->message, info->size);
}

OBB_EXPORT void obbmeta_msg_blob_release(void *data, void *user_data)
{
    (void)user_data;
    obbmsg_user_meta *um = (obbmsg_user_meta *)data;
    if (!um) return;
    if (um->user_meta_data && g_ready) {
        obbmsg_custom_msg_info *info = (obbmsg_custom_msg_info *)um->user_meta_data;
        g_api.g_free(info->message);
        g_api.g_free(info);
        __atomic_sub_fetch(&g_live_blobs, 1, __ATOMIC_RELAXED);
    }
    obbmsg_hand_back(um);
}

OBB_EXPORT int32_t obbmeta_msg_init(const obbmsg_api *api)
{
    if (!api || !api->acquire_user_meta || !api->add_user_meta_to_frame || !api->acquire_meta_lock ||
        !api->release_meta_lock || !api->g_malloc || !api->g_free)
        return -6;
    g_api = *api;
    g_ready = 1;
    return 0;
}

OBB_EXPORT int64_t obbmeta_msg_live_blobs(void) { return __atomic_load_n(&g_live_blobs, __ATOMIC_RELAXED); }

/* Attach `size` bytes of `message` to `frame` (an NvDsFrameMeta* of `batch`) as one user meta of `meta_type`
 * holding an NvDsCustomMsgInfo. Returns the NvDsUserMeta*, or NULL when not initialised / bad arguments. */
OBB_EXPORT void *obbmeta_msg_attach(void *batch, void *frame, const void *message, uint32_t size, int32_t meta_type)
{
    if (!g_ready || !batch || !frame || (!message && size)) return NULL;
    g_api.acquire_meta_lock(batch);
    obbmsg_user_meta *um = (obbmsg_user_meta *)g_api.acquire_user_meta(batch);
    if (!um) {
        g_api.release_meta_lock(batch);
        return NULL;
    }
    /* All four fields, always: a reused pool element may carry another owner's data and functions. */
    um->user_meta_data = obbmsg_new_info(message, size);
    um->base.batch_meta = batch;
    um->base.meta_type = meta_type;
    um->base.copy_func = obbmeta_msg_blob_copy;
    um->base.release_func = obbmeta_msg_blob_release;
    g_api.add_user_meta_to_frame(frame, um);
    g_api.release_meta_lock(batch);
    return um;
}


/* ------------------------------------------------------------------ event messages (NvDsEventMsgMeta)
 *
 * NvDsEventMsgMeta (nvdsmeta_schema.h) begins with the same fields in DeepStream 7.0, 7.1, 8.0, 9.0 and 9.1 (the
 * doxygen field lists of the 7.0 / 7.1 / 8.0 / 9.1 API references; the 8.0 header as vendored publicly; the v9.0.0
 * and v9.1.0 tags of NVIDIA/DeepStream). Offsets below were measured with offsetof() on the v9.1.0 header (LP64);
 * the 8.0 and v9.0.0 headers declare the same members before `sensorStr`. What follows sensorStr differs by version
 * (8.0 / 9.0 add sparse-4D / LLM / 3D-tracking members, 9.1 appends `visibility`): obbmeta never writes it, but
 * nvmsgconv reads some of it (pose, embedding, extMsg...), so every event meta is a zero-filled block at least as
 * large as the largest known struct: sizeof is 14040 in 9.1, 14032 in 8.0 / 9.0 (same headers), and 7.1's field
 * list stops before the sparse-4D members (its struct is smaller).
 */
#define OBBMETA_NVDS_EVENT_MSG_META 9 /* NvDsMetaType: 9th member since DeepStream 4.0, unchanged to 9.1 */
#define OBBMSG_EVENT_BLOCK 16384      /* bytes per event meta, zero-filled: > 14040 with room for growth */

typedef struct {        /* NvDsEventMsgMeta up to sensorStr (offsets from the v9.1.0 header) */
    int32_t type;       /*   0 NvDsEventType */
    int32_t obj_type;   /*   4 NvDsObjectType */
    float bbox[4];      /*   8 NvDsRect: top, left, width, height (this order) */
    double location[3]; /*  24 NvDsGeoLocation lat, lon, alt */
    double coord[3];    /*  48 NvDsCoordinate x, y, z */
    struct {            /*  72 NvDsObjectSignature (16 bytes with its padding) */
        double *values; /*  72 .signature */
        uint32_t size;  /*  80 .size: number of doubles */
    } sig;
    int32_t obj_class_id;   /*  88 */
    int32_t sensor_id;      /*  92 */
    int32_t module_id;      /*  96 */
    int32_t place_id;       /* 100 */
    int32_t component_id;   /* 104: nvmsgconv's comp-id filter compares this */
    int32_t frame_id;       /* 108 */
    double confidence;      /* 112 */
    uint64_t tracking_id;   /* 120 */
    char *ts;               /* 128 RFC 3339 text, the payload's "@timestamp" */
    char *object_id;        /* 136 the label: key of the object's sub-object for NVDS_OBJECT_TYPE_UNKNOWN */
    char *sensor_str;       /* 144 */
} obbmsg_event_head;

_Static_assert(offsetof(obbmsg_event_head, obj_type) == 4, "NvDsEventMsgMeta.objType");
_Static_assert(offsetof(obbmsg_event_head, bbox) == 8, "NvDsEventMsgMeta.bbox");
_Static_assert(offsetof(obbmsg_event_head, location) == 24, "NvDsEventMsgMeta.location");
_Static_assert(offsetof(obbmsg_event_head, coord) == 48, "NvDsEventMsgMeta.coordinate");
_Static_assert(offsetof(obbmsg_event_head, sig) == 72, "NvDsEventMsgMeta.objSignature");
_Static_assert(offsetof(obbmsg_event_head, sig.size) == 80, "NvDsEventMsgMeta.objSignature.size");
_Static_assert(offsetof(obbmsg_event_head, obj_class_id) == 88, "NvDsEventMsgMeta.objClassId");
_Static_assert(offsetof(obbmsg_event_head, frame_id) == 108, "NvDsEventMsgMeta.frameId");
_Static_assert(offsetof(obbmsg_event_head, confidence) == 112, "NvDsEventMsgMeta.confidence");
_Static_assert(offsetof(obbmsg_event_head, tracking_id) == 120, "NvDsEventMsgMeta.trackingId");
_Static_assert(offsetof(obbmsg_event_head, ts) == 128, "NvDsEventMsgMeta.ts");
_Static_assert(offsetof(obbmsg_event_head, object_id) == 136, "NvDsEventMsgMeta.objectId");
_Static_assert(offsetof(obbmsg_event_head, sensor_str) == 144, "NvDsEventMsgMeta.sensorStr");
_Static_assert(sizeof(obbmsg_event_head) == 152, "NvDsEventMsgMeta head");
_Static_assert(sizeof(obbmsg_event_head) <= OBBMSG_EVENT_BLOCK, "event block");

/* One object's event, as Python hands it over (obbmeta/nvds/messages.py: _EventIn). */
typedef struct {
    float bbox[4];  /* top, left, width, height */
    double confidence;
    uint64_t tracking_id;
    int32_t event_type, obj_type, obj_class_id, sensor_id, component_id, frame_id;
    const char *object_id; /* NULL: none */
    uint32_t sig_size;
    const double *signature;
} obbmsg_event_in;

static int64_t g_live_events = 0;

static char *obbmsg_strdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = (char *)g_api.g_malloc(n);
    memcpy(d, s, n);
    return d;
}

static double *obbmsg_doubles(const double *src, uint32_t n)
{
    if (!src || !n) return NULL;
    double *d = (double *)g_api.g_malloc((size_t)n * sizeof(double));
    memcpy(d, src, (size_t)n * sizeof(double));
    return d;
}

/* A zero-filled block whose head is `head` with every pointer obbmeta owns duplicated (g_malloc). */
static obbmsg_event_head *obbmsg_new_event(const obbmsg_event_head *head)
{
    void *block = g_api.g_malloc(OBBMSG_EVENT_BLOCK);
    memset(block, 0, OBBMSG_EVENT_BLOCK);
    obbmsg_event_head *ev = (obbmsg_event_head *)block;
    *ev = *head;
    ev->sig.values = obbmsg_doubles(head->sig.values, head->sig.size);
    ev->sig.size = ev->sig.values ? head->sig.size : 0;
    ev->ts = obbmsg_strdup(head->ts);
    ev->object_id = obbmsg_strdup(head->object_id);
    ev->sensor_str = obbmsg_strdup(head->sensor_str);
    __atomic_add_fetch(&g_live_events, 1, __ATOMIC_RELAXED);
    return ev;
}

/* Copies carry the head only (what obbmeta wrote); members after sensorStr start zeroed again, so a pointer some
 * other code put there is never shared between two owners. */
OBB_EXPORT void *obbmeta_msg_event_copy(void *data, void *user_data)
{
    (void)user_data;
    const obbmsg_user_meta *src = (const obbmsg_user_meta *)data;
    if (!src || !src->user_meta_data || !g_ready) return NULL;
    return obbmsg_new_event((const obbmsg_event_head *)src->user_meta_data);
}

/* Frees what obbmeta allocated: objSignature.signature, ts, objectId, sensorStr and the block. */
OBB_EXPORT void obbmeta_msg_event_release(void *data, void *user_data)
{
    (void)user_data;
    obbmsg_user_meta *um = (obbmsg_user_meta *)data;
    if (!um) return;
    if (um->user_meta_data && g_ready) {
        obbmsg_event_head *ev = (obbmsg_event_head *)um->user_meta_data;
        g_api.g_free(ev->sig.values);
        g_api.g_free(ev->ts);
        g_api.g_free(ev->object_id);
        g_api.g_free(ev->sensor_str);
        g_api.g_free(ev);
        __atomic_sub_fetch(&g_live_events, 1, __ATOMIC_RELAXED);
    }
    obbmsg_hand_back(um);
}

OBB_EXPORT int64_t obbmeta_msg_live_events(void) { return __atomic_load_n(&g_live_events, __ATOMIC_RELAXED); }

OBB_EXPORT int32_t obbmeta_msg_event_block_size(void) { return OBBMSG_EVENT_BLOCK; }

/* What obbmeta/nvds/messages.py (NVDS_MESSAGE, an obbmeta._native.NativeLibrary) mirrors in ctypes, checked at
 * load: `names[i]` is "T" for sizeof(T), "T.f" for offsetof(T, f), else a constant, with its value in `values[i]`.
 * Writes at most `capacity` entries; returns how many there are. The ABI version changes when an entry point's
 * signature does. */
OBB_EXPORT int obbmeta_msg_abi_version(void) { return 1; }

OBB_EXPORT int64_t obbmeta_msg_abi_table(const char **names, int64_t *values, int64_t capacity)
{
    static const obb_abi_entry table[] = {
        OBB_ABI_SIZE(obbmsg_api),
        OBB_ABI_OFFSET(obbmsg_api, acquire_user_meta), OBB_ABI_OFFSET(obbmsg_api, add_user_meta_to_frame),
        OBB_ABI_OFFSET(obbmsg_api, acquire_meta_lock), OBB_ABI_OFFSET(obbmsg_api, release_meta_lock),
        OBB_ABI_OFFSET(obbmsg_api, g_malloc), OBB_ABI_OFFSET(obbmsg_api, g_free),
        OBB_ABI_SIZE(obbmsg_custom_msg_info), OBB_ABI_OFFSET(obbmsg_custom_msg_info, message),
        OBB_ABI_OFFSET(obbmsg_custom_msg_info, size),
        OBB_ABI_SIZE(obbmsg_event_in),
        OBB_ABI_OFFSET(obbmsg_event_in, bbox), OBB_ABI_OFFSET(obbmsg_event_in, confidence),
        OBB_ABI_OFFSET(obbmsg_event_in, tracking_id), OBB_ABI_OFFSET(obbmsg_event_in, event_type),
        OBB_ABI_OFFSET(obbmsg_event_in, obj_type), OBB_ABI_OFFSET(obbmsg_event_in, obj_class_id),
        OBB_ABI_OFFSET(obbmsg_event_in, sensor_id), OBB_ABI_OFFSET(obbmsg_event_in, component_id),
        OBB_ABI_OFFSET(obbmsg_event_in, frame_id), OBB_ABI_OFFSET(obbmsg_event_in, object_id),
        OBB_ABI_OFFSET(obbmsg_event_in, sig_size), OBB_ABI_OFFSET(obbmsg_event_in, signature),
        OBB_ABI_CONST(OBBMETA_NVDS_EVENT_MSG_META),
    };
    return OBB_ABI_COPY(table, names, values, capacity);
}

/* Attach `n` event metas (one per item) to `frame` (an NvDsFrameMeta* of `batch`), all with timestamp `ts` and
 * sensor string `sensor_str` (either may be NULL), under one lock. Returns the number attached, or -1 when not
 * initialised / bad arguments, or -2 when the pool returned NULL (those attached before stay attached). */
OBB_EXPORT int32_t obbmeta_msg_attach_events(void *batch, void *frame, const obbmsg_event_in *items, int32_t n,
                                             const char *ts, const char *sensor_str)
{
    if (!g_ready || !batch || !frame || n < 0 || (n > 0 && !items)) return -1;
    int32_t done = 0;
    g_api.acquire_meta_lock(batch);
    for (; done < n; done++) {
        const obbmsg_event_in *it = &items[done];
        obbmsg_user_meta *um = (obbmsg_user_meta *)g_api.acquire_user_meta(batch);
        if (!um) {
            g_api.release_meta_lock(batch);
            return -2;
        }
        obbmsg_event_head head;
        memset(&head, 0, sizeof head);
        head.type = it->event_type;
        head.obj_type = it->obj_type;
        memcpy(head.bbox, it->bbox, sizeof head.bbox);
        head.sig.values = (double *)it->signature;
        head.sig.size = it->sig_size;
        head.obj_class_id = it->obj_class_id;
        head.sensor_id = it->sensor_id;
        head.component_id = it->component_id;
        head.frame_id = it->frame_id;
        head.confidence = it->confidence;
        head.tracking_id = it->tracking_id;
        head.ts = (char *)ts;
        head.object_id = (char *)it->object_id;
        head.sensor_str = (char *)sensor_str;
        um->user_meta_data = obbmsg_new_event(&head); /* duplicates every pointer */
        um->base.batch_meta = batch;
        um->base.meta_type = OBBMETA_NVDS_EVENT_MSG_META;
        um->base.copy_func = obbmeta_msg_event_copy;
        um->base.release_func = obbmeta_msg_event_release;
        g_api.add_user_meta_to_frame(frame, um);
    }
    g_api.release_meta_lock(batch);
    return done;
}
