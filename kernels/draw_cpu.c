/* obbmeta: host rasteriser for rotated-box outlines (kernels/obb_draw.h) behind a C ABI for ctypes.
 * Boxes are painted in order, so a later box wins where outlines cross (the CUDA kernel reproduces this). */
#include <stdint.h>

#include "obb_draw.h"

#define OBB_EXPORT __attribute__((visibility("default")))

OBB_EXPORT int obbmeta_draw_abi_version(void) { return 1; }

/* image: height x width pixels of `channels` bytes, rows `row_stride` bytes apart (pixels contiguous).
 * boxes: (n, 5) float32; colors: (n, channels) uint8. */
OBB_EXPORT void obbmeta_draw_outlines(uint8_t *image, int height, int width, int channels, int64_t row_stride,
                                      const float *boxes, int64_t n, const uint8_t *colors, double thickness)
{
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t *color = colors + i * channels;
        for (int k = 0; k < 4; ++k) {
            obb_edge e;
            if (!obb_edge_setup(boxes + 5 * i, k, thickness, width, height, &e)) continue;
            for (int m = e.m0; m <= e.m1; ++m) {
                int lo, hi;
                if (!obb_edge_minor_span(&e, m, width, height, &lo, &hi)) continue;
                for (int v = lo; v <= hi; ++v) {
                    const int x = e.major_is_x ? m : v, y = e.major_is_x ? v : m;
                    if (!obb_edge_covers(&e, x, y)) continue;
                    uint8_t *px = image + (int64_t)y * row_stride + (int64_t)x * channels;
                    for (int c = 0; c < channels; ++c) px[c] = color[c];
                }
            }
        }
    }
}
