/* obbmeta: exact oriented-box geometry, one implementation for the host (C) and the device (CUDA).
 *
 * Box layout everywhere: float[5] = cx, cy, w, h, angle. The angle is in radians, positive = clockwise on
 * screen (image y axis points down): the width axis is (cos a, sin a), the height axis (-sin a, cos a).
 * Corner k of a box is c + R(a) * (sx_k * w/2, sy_k * h/2) with (sx, sy) = (-,-), (+,-), (+,+), (-,+),
 * i.e. starting at the top-left of the un-rotated box and running clockwise on screen.
 *
 * Numerical choices (each one a lesson from detectron2 / mmcv bug reports):
 *  - everything is computed in double from float inputs, relative to the second box's centre and axes, so that
 *    boxes far from the origin (1e5 px) lose nothing and identical boxes give exactly 1;
 *  - the intersection is convex clipping (Sutherland-Hodgman) of box A, expressed in B's frame, against B's
 *    axis-aligned extent: no vertex sorting, no convex hull, hence none of the sort / FMA / missed-vertex bugs;
 *  - invalid boxes (non-finite values, w <= 0 or h <= 0) have area 0 and IoU 0 with everything;
 *  - the result is clamped to [0, 1] and can never be NaN.
 */
#ifndef OBBMETA_OBB_GEOMETRY_H
#define OBBMETA_OBB_GEOMETRY_H

#include <math.h>

#if defined(__CUDACC__)
#define OBB_HD __host__ __device__ __forceinline__
#else
#define OBB_HD static inline
#endif

/* A clipped convex quadrilateral has at most 8 vertices; the margin absorbs rounding that could add a few. */
#define OBB_CLIP_CAPACITY 16

typedef struct {
    double x, y;
} obb_point;

OBB_HD int obb_is_valid(const float *b)
{
    /* Written so that NaN fails every comparison. */
    return isfinite(b[0]) && isfinite(b[1]) && isfinite(b[4]) && isfinite(b[2]) && isfinite(b[3]) &&
           b[2] > 0.0f && b[3] > 0.0f;
}

OBB_HD double obb_area(const float *b)
{
    return obb_is_valid(b) ? (double)b[2] * (double)b[3] : 0.0;
}

/* The 4 corners (x0, y0, ..., x3, y3) in the documented order. */
OBB_HD void obb_corners(const float *b, double out[8])
{
    const double c = cos((double)b[4]), s = sin((double)b[4]);
    const double hw = 0.5 * (double)b[2], hh = 0.5 * (double)b[3];
    const double sx[4] = {-1.0, 1.0, 1.0, -1.0};
    const double sy[4] = {-1.0, -1.0, 1.0, 1.0};
    for (int k = 0; k < 4; ++k) {
        const double lx = sx[k] * hw, ly = sy[k] * hh;
        out[2 * k] = (double)b[0] + c * lx - s * ly;
        out[2 * k + 1] = (double)b[1] + s * lx + c * ly;
    }
}

/* Tight axis-aligned box (x1, y1, x2, y2) around the polygon. */
OBB_HD void obb_aabb(const float *b, double out[4])
{
    const double c = fabs(cos((double)b[4])), s = fabs(sin((double)b[4]));
    const double hw = 0.5 * (double)b[2], hh = 0.5 * (double)b[3];
    const double ex = c * hw + s * hh, ey = s * hw + c * hh;
    out[0] = (double)b[0] - ex;
    out[1] = (double)b[1] - ey;
    out[2] = (double)b[0] + ex;
    out[3] = (double)b[1] + ey;
}

/* Keep the part of polygon `in` where sign * coord(axis) <= limit; returns the new vertex count. */
OBB_HD int obb_clip_halfplane(const obb_point *in, int n, obb_point *out, int axis, double sign, double limit)
{
    int m = 0;
    for (int i = 0; i < n; ++i) {
        const obb_point p = in[i];
        const obb_point q = in[(i + 1) % n];
        const double dp = limit - sign * (axis ? p.y : p.x);
        const double dq = limit - sign * (axis ? q.y : q.x);
        if (dp >= 0.0 && m < OBB_CLIP_CAPACITY) out[m++] = p;
        if ((dp >= 0.0) != (dq >= 0.0) && m < OBB_CLIP_CAPACITY) {
            /* dp and dq have strictly different signs here, so dp - dq is never 0. */
            const double t = dp / (dp - dq);
            obb_point r;
            r.x = p.x + t * (q.x - p.x);
            r.y = p.y + t * (q.y - p.y);
            out[m++] = r;
        }
    }
    return m;
}

OBB_HD double obb_polygon_area(const obb_point *p, int n)
{
    double twice = 0.0;
    for (int i = 0; i < n; ++i) {
        const obb_point q = p[(i + 1) % n];
        twice += p[i].x * q.y - q.x * p[i].y;
    }
    return 0.5 * fabs(twice);
}

/* Area of the intersection of two valid boxes. */
OBB_HD double obb_intersection_area(const float *a, const float *b)
{
    const double bw = 0.5 * (double)b[2], bh = 0.5 * (double)b[3];
    const double aw = 0.5 * (double)a[2], ah = 0.5 * (double)a[3];
    const double dx = (double)a[0] - (double)b[0], dy = (double)a[1] - (double)b[1];
    /* Disjoint circumcircles: no overlap (cheap early exit, exact). */
    const double reach = sqrt(aw * aw + ah * ah) + sqrt(bw * bw + bh * bh);
    if (dx * dx + dy * dy > reach * reach) return 0.0;

    /* A's centre and axes in B's frame (rotate by -angle_b around B's centre). */
    const double cb = cos((double)b[4]), sb = sin((double)b[4]);
    const double ox = cb * dx + sb * dy, oy = -sb * dx + cb * dy;
    const double rel = (double)a[4] - (double)b[4];
    const double c = cos(rel), s = sin(rel);
    const double sx[4] = {-1.0, 1.0, 1.0, -1.0};
    const double sy[4] = {-1.0, -1.0, 1.0, 1.0};

    obb_point buf0[OBB_CLIP_CAPACITY], buf1[OBB_CLIP_CAPACITY];
    for (int k = 0; k < 4; ++k) {
        const double lx = sx[k] * aw, ly = sy[k] * ah;
        buf0[k].x = ox + c * lx - s * ly;
        buf0[k].y = oy + s * lx + c * ly;
    }
    int n = 4;
    n = obb_clip_halfplane(buf0, n, buf1, 0, 1.0, bw);
    if (n < 3) return 0.0;
    n = obb_clip_halfplane(buf1, n, buf0, 0, -1.0, bw);
    if (n < 3) return 0.0;
    n = obb_clip_halfplane(buf0, n, buf1, 1, 1.0, bh);
    if (n < 3) return 0.0;
    n = obb_clip_halfplane(buf1, n, buf0, 1, -1.0, bh);
    if (n < 3) return 0.0;
    return obb_polygon_area(buf0, n);
}

/* Exact IoU of two boxes, in [0, 1]; 0 when either box is invalid. */
OBB_HD double obb_iou(const float *a, const float *b)
{
    if (!obb_is_valid(a) || !obb_is_valid(b)) return 0.0;
    const double area_a = (double)a[2] * (double)a[3];
    const double area_b = (double)b[2] * (double)b[3];
    double inter = obb_intersection_area(a, b);
    const double smaller = area_a < area_b ? area_a : area_b;
    if (inter > smaller) inter = smaller;
    const double uni = area_a + area_b - inter;
    if (!(uni > 0.0)) return 0.0;
    const double iou = inter / uni;
    return iou < 0.0 ? 0.0 : (iou > 1.0 ? 1.0 : iou);
}

#endif /* OBBMETA_OBB_GEOMETRY_H */
