/* Stand-in for <cuda_runtime.h> when building NVIDIA's nvmsgconv on a machine without the CUDA toolkit
 * (build.sh always puts this folder on the include path, so the build needs no CUDA toolkit).
 *
 * nvmsgconv uses one CUDA call: dsmeta_payload.cpp copies a ds3d lidar point cloud that lives in GPU memory back
 * to the host with cudaMemcpy(..., cudaMemcpyDeviceToHost). That path needs a ds3d datamap from a lidar pipeline
 * and a GPU; obbmeta's tests never take it. Here the call fails with cudaErrorNotSupported instead of linking
 * libcudart, so the built library loads on a CPU-only machine. The JSON paths (full and minimal schema, frame /
 * object metas and NvDsEventMsgMeta) do not touch CUDA. Values are those of the CUDA runtime API. */
#ifndef OBBMETA_MSGCONV_CUDA_RUNTIME_STANDIN_H
#define OBBMETA_MSGCONV_CUDA_RUNTIME_STANDIN_H

#include <stddef.h>

typedef int cudaError_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};

static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    (void)dst; (void)src; (void)count; (void)kind;
    return 801; /* cudaErrorNotSupported */
}

#endif
