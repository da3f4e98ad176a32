/* obbmeta: the frame-level message blob for nvmsgconv (NVDS_CUSTOM_MSG_BLOB user meta holding an
 * NvDsCustomMsgInfo {void *message; guint size;}), with the C copy / release functions DeepStream calls on tee /
 * queue copies and on buffer release.
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
#include <stdint.h>
#include <string.h>

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
    /* The user-meta pool hands elements out again without clearing them: leave nothing of ours behind. */
    um->user_meta_data = NULL;
    um->base.copy_func = NULL;
    um->base.release_func = NULL;
    um->base.meta_type = OBBMETA_NVDS_USER_META;
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
