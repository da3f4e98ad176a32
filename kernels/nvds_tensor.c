/* obbmeta: the model's output tensors as nvinfer attaches them (output-tensor-meta): one NvDsInferTensorMeta per
 * frame (frame user meta, primary mode) or per object (object user meta, secondary mode), meta_type
 * NVDSINFER_TENSOR_OUTPUT_META, with the copy / release functions DeepStream calls on tee / queue copies and on
 * buffer release.
 *
 * The structs are written from NVIDIA's public headers (gstnvdsinfer.h, nvdsinfer.h of DeepStream 8.0 / 9.1) in our
 * words, for LP64. As in nvinfer, the data of one frame or object (the host copy of each output layer, the layer
 * descriptions and names) is shared by the meta and every copy of it through `priv_data`, reference counted: a copy
 * is shallow, the last release frees it. Device pointers (`out_buf_ptrs_dev`) point into tensors Python keeps alive
 * under a handle; when the last meta of a handle is released the handle is queued for Python to drop
 * (obbmeta_tensor_released), so no Python code runs inside DeepStream's release.
 *
 * Like nvds_message.c, NVIDIA's and glib's functions come in a table from the library obbmeta's loader chose.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "obb_abi.h"

#define OBB_EXPORT __attribute__((visibility("default")))
#define OBBMETA_NVDS_USER_META 7           /* what NVIDIA's user-meta pool stamps on its elements */
#define OBBT_TENSOR_OUTPUT_META 12         /* NVDSINFER_TENSOR_OUTPUT_META (nvdsmeta.h, 6.2 - 9.1) */
#define OBBT_MAX_DIMS 8                    /* NVDSINFER_MAX_DIMS */
#define OBBT_MAX_LAYERS 64

typedef void *(*obbt_copy_fn)(void *data, void *user_data);
typedef void (*obbt_release_fn)(void *data, void *user_data);

typedef struct { /* NvDsBaseMeta */
    void *batch_meta;
    int32_t meta_type;
    void *user_context;
    obbt_copy_fn copy_func;
    obbt_release_fn release_func;
} obbt_base_meta;

typedef struct { /* NvDsUserMeta */
    obbt_base_meta base;
    void *user_meta_data;
} obbt_user_meta;

typedef struct { /* NvDsInferDims */
    uint32_t numDims;
    uint32_t d[OBBT_MAX_DIMS];
    uint32_t numElements;
} obbt_dims;

typedef struct { /* NvDsInferLayerInfo */
    int32_t dataType; /* NvDsInferDataType: FLOAT 0, HALF 1, INT8 2, INT32 3, INT64 4, UINT8 5 */
    obbt_dims inferDims;
    int32_t bindingIndex;
    const char *layerName;
    void *buffer;
    int32_t isInput;
} obbt_layer_info;

typedef struct { /* NvDsInferNetworkInfo */
    uint32_t width, height, channels;
} obbt_network_info;

typedef struct { /* NvDsInferTensorMeta (symmetric_padding: DeepStream 7.0 and later) */
    uint32_t unique_id;
    uint32_t num_output_layers;
    obbt_layer_info *output_layers_info;
    void **out_buf_ptrs_host;
    void **out_buf_ptrs_dev;
    int32_t gpu_id;
    void *priv_data;
    obbt_network_info network_info;
    int32_t maintain_aspect_ratio;
    int32_t symmetric_padding;
} obbt_tensor_meta;

_Static_assert(sizeof(obbt_dims) == 40, "NvDsInferDims");
_Static_assert(offsetof(obbt_layer_info, bindingIndex) == 44, "NvDsInferLayerInfo.bindingIndex");
_Static_assert(offsetof(obbt_layer_info, layerName) == 48, "NvDsInferLayerInfo.layerName");
_Static_assert(sizeof(obbt_layer_info) == 72, "NvDsInferLayerInfo");
_Static_assert(offsetof(obbt_tensor_meta, priv_data) == 40, "NvDsInferTensorMeta.priv_data");
_Static_assert(offsetof(obbt_tensor_meta, network_info) == 48, "NvDsInferTensorMeta.network_info");
_Static_assert(offsetof(obbt_tensor_meta, symmetric_padding) == 64, "NvDsInferTensorMeta.symmetric_padding");

typedef struct {
    void *(*acquire_user_meta)(void *batch);
    void (*add_user_meta_to_frame)(void *frame, void *user);
    void (*add_user_meta_to_obj)(void *obj, void *user);
    void (*acquire_meta_lock)(void *batch);
    void (*release_meta_lock)(void *batch);
    void *(*g_malloc)(size_t n);
    void (*g_free)(void *p);
} obbt_api;

/* One frame's or object's tensors, shared by its meta and every copy (priv_data). */
typedef struct {
    int64_t refs;
    uint64_t handle; /* Python's keep-alive handle of the device tensors (0: none) */
    uint32_t num_layers;
    obbt_layer_info *layers; /* buffer = the host copy */
    char **names;
    void **host;
    void **dev;
} obbt_shared;

/* What Python hands over for one frame or object. */
typedef struct {
    uint32_t unique_id;
    int32_t gpu_id;
    obbt_network_info network_info;
    int32_t maintain_aspect_ratio;
    int32_t symmetric_padding;
    uint32_t num_layers;
    const obbt_layer_info *layers; /* buffer: this unit's host data (copied); layerName copied */
    const uint64_t *dev;           /* num_layers device addresses of this unit's data (0: none) */
    uint64_t handle;
    int32_t meta_type;
} obbt_attach_in;

static obbt_api g_api;
static int g_ready = 0;
static int64_t g_live_shared = 0;
static int64_t g_live_metas = 0;
static pthread_mutex_t g_released_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *g_released = NULL;
static int64_t g_released_n = 0, g_released_cap = 0;

static size_t obbt_element_size(int32_t data_type)
{
    switch (data_type) {
    case 0: return 4; /* FLOAT */
    case 1: return 2; /* HALF */
    case 2: return 1; /* INT8 */
    case 3: return 4; /* INT32 */
    case 4: return 8; /* INT64 */
    case 5: return 1; /* UINT8 */
    default: return 0;
    }
}

static void obbt_queue_released(uint64_t handle)
{
    pthread_mutex_lock(&g_released_lock);
    if (g_released_n == g_released_cap) {
        int64_t cap = g_released_cap ? 2 * g_released_cap : 64;
        uint64_t *grown = (uint64_t *)g_api.g_malloc((size_t)cap * sizeof(uint64_t));
        if (g_released_n) memcpy(grown, g_released, (size_t)g_released_n * sizeof(uint64_t));
        if (g_released) g_api.g_free(g_released);
        g_released = grown;
        g_released_cap = cap;
    }
    g_released[g_released_n++] = handle;
    pthread_mutex_unlock(&g_released_lock);
}

static void obbt_unref(obbt_shared *s)
{
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    for (uint32_t i = 0; i < s->num_layers; ++i) {
        g_api.g_free(s->host[i]);
        g_api.g_free(s->names[i]);
    }
    g_api.g_free(s->host);
    g_api.g_free(s->dev);
    g_api.g_free(s->names);
    g_api.g_free(s->layers);
    if (s->handle) obbt_queue_released(s->handle);
    g_api.g_free(s);
    __atomic_sub_fetch(&g_live_shared, 1, __ATOMIC_RELAXED);
}

/* A tensor meta over `s` (one more reference): its own layer array and pointer arrays, as nvinfer's copy makes. */
static obbt_tensor_meta *obbt_new_meta(const obbt_tensor_meta *head, obbt_shared *s)
{
    obbt_tensor_meta *m = (obbt_tensor_meta *)g_api.g_malloc(sizeof(obbt_tensor_meta));
    *m = *head;
    size_t n = s->num_layers;
    m->num_output_layers = (uint32_t)n;
    m->output_layers_info = (obbt_layer_info *)g_api.g_malloc(n * sizeof(obbt_layer_info) + 1);
    m->out_buf_ptrs_host = (void **)g_api.g_malloc(n * sizeof(void *) + 1);
    m->out_buf_ptrs_dev = (void **)g_api.g_malloc(n * sizeof(void *) + 1);
    if (n) {
        memcpy(m->output_layers_info, s->layers, n * sizeof(obbt_layer_info));
        memcpy(m->out_buf_ptrs_host, s->host, n * sizeof(void *));
        memcpy(m->out_buf_ptrs_dev, s->dev, n * sizeof(void *));
    }
    m->priv_data = s;
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&g_live_metas, 1, __ATOMIC_RELAXED);
    return m;
}

static void obbt_free_meta(obbt_tensor_meta *m)
{
    obbt_shared *s = (obbt_shared *)m->priv_data;
    g_api.g_free(m->output_layers_info);
    g_api.g_free(m->out_buf_ptrs_host);
    g_api.g_free(m->out_buf_ptrs_dev);
    g_api.g_free(m);
    __atomic_sub_fetch(&g_live_metas, 1, __ATOMIC_RELAXED);
    if (s) obbt_unref(s);
}

/* DeepStream calls copy / release with the NvDsUserMeta* as `data`. */
OBB_EXPORT void *obbmeta_tensor_meta_copy(void *data, void *user_data)
{
    (void)user_data;
    const obbt_user_meta *src = (const obbt_user_meta *)data;
    if (!src || !src->user_meta_data || !g_ready) return NULL;
    const obbt_tensor_meta *m = (const obbt_tensor_meta *)src->user_meta_data;
    return obbt_new_meta(m, (obbt_shared *)m->priv_data);
}

OBB_EXPORT void obbmeta_tensor_meta_release(void *data, void *user_data)
{
    (void)user_data;
    obbt_user_meta *um = (obbt_user_meta *)data;
    if (!um) return;
    if (um->user_meta_data && g_ready) obbt_free_meta((obbt_tensor_meta *)um->user_meta_data);
    um->user_meta_data = NULL; /* the pool hands elements out again without clearing them */
    um->base.copy_func = NULL;
    um->base.release_func = NULL;
    um->base.meta_type = OBBMETA_NVDS_USER_META;
}

OBB_EXPORT int32_t obbmeta_tensor_init(const obbt_api *api)
{
    if (!api || !api->acquire_user_meta || !api->add_user_meta_to_frame || !api->add_user_meta_to_obj ||
        !api->acquire_meta_lock || !api->release_meta_lock || !api->g_malloc || !api->g_free)
        return -6;
    g_api = *api;
    g_ready = 1;
    return 0;
}

/* Attach one NvDsInferTensorMeta to `target` (an NvDsFrameMeta*, or an NvDsObjectMeta* with `to_object`) of
 * `batch`, its data copied from `in`. Returns the NvDsUserMeta*, or NULL (not initialised, bad arguments: an
 * unknown data type, more than OBBT_MAX_LAYERS layers or OBBT_MAX_DIMS dims). */
OBB_EXPORT void *obbmeta_tensor_attach(void *batch, void *target, int32_t to_object, const obbt_attach_in *in)
{
    if (!g_ready || !batch || !target || !in || in->num_layers > OBBT_MAX_LAYERS || (in->num_layers && !in->layers))
        return NULL;
    uint32_t n = in->num_layers;
    for (uint32_t i = 0; i < n; ++i) {
        const obbt_layer_info *l = &in->layers[i];
        if (!obbt_element_size(l->dataType) || l->inferDims.numDims > OBBT_MAX_DIMS ||
            (l->inferDims.numElements && !l->buffer))
            return NULL;
    }
    obbt_shared *s = (obbt_shared *)g_api.g_malloc(sizeof(obbt_shared));
    memset(s, 0, sizeof(*s));
    s->refs = 0;
    s->handle = in->handle;
    s->num_layers = n;
    s->layers = (obbt_layer_info *)g_api.g_malloc(n * sizeof(obbt_layer_info) + 1);
    s->names = (char **)g_api.g_malloc(n * sizeof(char *) + 1);
    s->host = (void **)g_api.g_malloc(n * sizeof(void *) + 1);
    s->dev = (void **)g_api.g_malloc(n * sizeof(void *) + 1);
    for (uint32_t i = 0; i < n; ++i) {
        const obbt_layer_info *l = &in->layers[i];
        size_t bytes = (size_t)l->inferDims.numElements * obbt_element_size(l->dataType);
        s->host[i] = g_api.g_malloc(bytes + 1);
        if (bytes) memcpy(s->host[i], l->buffer, bytes);
        const char *name = l->layerName ? l->layerName : "";
        size_t len = strlen(name) + 1;
        s->names[i] = (char *)g_api.g_malloc(len);
        memcpy(s->names[i], name, len);
        s->layers[i] = *l;
        s->layers[i].layerName = s->names[i];
        s->layers[i].buffer = s->host[i];
        s->dev[i] = in->dev ? (void *)(uintptr_t)in->dev[i] : NULL;
    }
    __atomic_add_fetch(&g_live_shared, 1, __ATOMIC_RELAXED);
    obbt_tensor_meta head;
    memset(&head, 0, sizeof(head));
    head.unique_id = in->unique_id;
    head.gpu_id = in->gpu_id;
    head.network_info = in->network_info;
    head.maintain_aspect_ratio = in->maintain_aspect_ratio;
    head.symmetric_padding = in->symmetric_padding;
    obbt_tensor_meta *m = obbt_new_meta(&head, s);

    g_api.acquire_meta_lock(batch);
    obbt_user_meta *um = (obbt_user_meta *)g_api.acquire_user_meta(batch);
    if (!um) {
        g_api.release_meta_lock(batch);
        obbt_free_meta(m);
        return NULL;
    }
    um->user_meta_data = m;
    um->base.batch_meta = batch;
    um->base.meta_type = in->meta_type ? in->meta_type : OBBT_TENSOR_OUTPUT_META;
    um->base.copy_func = obbmeta_tensor_meta_copy;
    um->base.release_func = obbmeta_tensor_meta_release;
    if (to_object)
        g_api.add_user_meta_to_obj(target, um);
    else
        g_api.add_user_meta_to_frame(target, um);
    g_api.release_meta_lock(batch);
    return um;
}

/* The keep-alive handles whose last meta was released since the last call (at most `capacity`; the rest stay). */
OBB_EXPORT int64_t obbmeta_tensor_released(uint64_t *out, int64_t capacity)
{
    pthread_mutex_lock(&g_released_lock);
    int64_t n = g_released_n < capacity ? g_released_n : capacity;
    if (n > 0) {
        memcpy(out, g_released, (size_t)n * sizeof(uint64_t));
        memmove(g_released, g_released + n, (size_t)(g_released_n - n) * sizeof(uint64_t));
        g_released_n -= n;
    }
    pthread_mutex_unlock(&g_released_lock);
    return n;
}

/* Tensor metas (and shared data blocks) written or copied and not yet released: a leak check. */
OBB_EXPORT int64_t obbmeta_tensor_live_metas(void) { return __atomic_load_n(&g_live_metas, __ATOMIC_RELAXED); }
OBB_EXPORT int64_t obbmeta_tensor_live_shared(void) { return __atomic_load_n(&g_live_shared, __ATOMIC_RELAXED); }

#define OBBT_ABI 1
OBB_EXPORT int obbmeta_tensor_abi_version(void) { return OBBT_ABI; }

OBB_EXPORT int64_t obbmeta_tensor_abi_table(const char **names, int64_t *values, int64_t capacity)
{
    static const obb_abi_entry table[] = {
        OBB_ABI_SIZE(obbt_api),
        OBB_ABI_SIZE(obbt_dims),
        OBB_ABI_SIZE(obbt_layer_info),
        OBB_ABI_OFFSET(obbt_layer_info, inferDims),
        OBB_ABI_OFFSET(obbt_layer_info, bindingIndex),
        OBB_ABI_OFFSET(obbt_layer_info, layerName),
        OBB_ABI_OFFSET(obbt_layer_info, buffer),
        OBB_ABI_OFFSET(obbt_layer_info, isInput),
        OBB_ABI_SIZE(obbt_network_info),
        OBB_ABI_SIZE(obbt_tensor_meta),
        OBB_ABI_OFFSET(obbt_tensor_meta, output_layers_info),
        OBB_ABI_OFFSET(obbt_tensor_meta, out_buf_ptrs_host),
        OBB_ABI_OFFSET(obbt_tensor_meta, out_buf_ptrs_dev),
        OBB_ABI_OFFSET(obbt_tensor_meta, gpu_id),
        OBB_ABI_OFFSET(obbt_tensor_meta, priv_data),
        OBB_ABI_OFFSET(obbt_tensor_meta, network_info),
        OBB_ABI_OFFSET(obbt_tensor_meta, maintain_aspect_ratio),
        OBB_ABI_OFFSET(obbt_tensor_meta, symmetric_padding),
        OBB_ABI_SIZE(obbt_attach_in),
        OBB_ABI_OFFSET(obbt_attach_in, layers),
        OBB_ABI_OFFSET(obbt_attach_in, dev),
        OBB_ABI_OFFSET(obbt_attach_in, handle),
        OBB_ABI_OFFSET(obbt_attach_in, meta_type),
        OBB_ABI_CONST(OBBT_TENSOR_OUTPUT_META),
        OBB_ABI_CONST(OBBT_MAX_DIMS),
        OBB_ABI_CONST(OBBT_MAX_LAYERS),
    };
    return OBB_ABI_COPY(table, names, values, capacity);
}
