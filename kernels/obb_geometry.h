/* obbmeta: exact oriented-box geometry, one implementation for the host (C) and the device (CUDA).
 *
 * Box layout everywhere: float[5] = cx, cy, w, h, angle. The angle is in radians, positive = clockwise on
 * screen (image y axis points down): the width axis is (cos a, sin a), the height axis (-sin a, cos a).
 * Corner k of a box is c + R(a) * (sx_k * w/2, sy_k * h/2) with (sx, sy) = (-,-), (+,-), (+,+), (-,+),
 * i.e. starting at the top-left of the un-rotated box and running clockwise on screen.
 *
 * Numerical choices (each one a lesson from detectron2 / mmcv bug reports):
 *  - everything is computed in double (obb_box), from float32 or float64 inputs, relative to the second box's
 *    centre and axes, so that boxes far from the origin (1e5 px) lose nothing and identical boxes give exactly 1;
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

/* One box in double precision: every computation below works on this, so float32 and float64 inputs share one
 * implementation (a float32 value converts to double exactly, so float32 results are what they always were). */
typedef struct {
    double cx, cy, w, h, a;
} obb_box;

OBB_HD obb_box obb_box_from_float(const float *b)
{
    obb_box r;
    r.cx = (double)b[0];
    r.cy = (double)b[1];
    r.w = (double)b[2];
    r.h = (double)b[3];
    r.a = (double)b[4];
    return r;
}

OBB_HD obb_box obb_box_from_double(const double *b)
{
    obb_box r;
    r.cx = b[0];
    r.cy = b[1];
    r.w = b[2];
    r.h = b[3];
    r.a = b[4];
    return r;
}

OBB_HD int obb_box_valid(const obb_box *b)
{
    /* Written so that NaN fails every comparison. */
    return isfinite(b->cx) && isfinite(b->cy) && isfinite(b->a) && isfinite(b->w) && isfinite(b->h) && b->w > 0.0 &&
           b->h > 0.0;
}

/* The 4 corners (x0, y0, ..., x3, y3) in the documented order. */
OBB_HD void obb_box_corners(const obb_box *b, double out[8])
{
    const double c = cos(b->a), s = sin(b->a);
    const double hw = 0.5 * b->w, hh = 0.5 * b->h;
    const double sx[4] = {-1.0, 1.0, 1.0, -1.0};
    const double sy[4] = {-1.0, -1.0, 1.0, 1.0};
    for (int k = 0; k < 4; ++k) {
        const double lx = sx[k] * hw, ly = sy[k] * hh;
        out[2 * k] = b->cx + c * lx - s * ly;
        out[2 * k + 1] = b->cy + s * lx + c * ly;
    }
}

/* Tight axis-aligned box (x1, y1, x2, y2) around the polygon. */
OBB_HD void obb_box_aabb(const obb_box *b, double out[4])
{
    const double c = fabs(cos(b->a)), s = fabs(sin(b->a));
    const double hw = 0.5 * b->w, hh = 0.5 * b->h;
    const double ex = c * hw + s * hh, ey = s * hw + c * hh;
    out[0] = b->cx - ex;
    out[1] = b->cy - ey;
    out[2] = b->cx + ex;
    out[3] = b->cy + ey;
}

/* float[5] forms of the above, for the writers and the rasteriser (which take float32 boxes). */
OBB_HD int obb_is_valid(const float *b)
{
    const obb_box box = obb_box_from_float(b);
    return obb_box_valid(&box);
}

OBB_HD double obb_area(const float *b)
{
    return obb_is_valid(b) ? (double)b[2] * (double)b[3] : 0.0;
}

OBB_HD void obb_corners(const float *b, double out[8])
{
    const obb_box box = obb_box_from_float(b);
    obb_box_corners(&box, out);
}

OBB_HD void obb_aabb(const float *b, double out[4])
{
    const obb_box box = obb_box_from_float(b);
    obb_box_aabb(&box, out);
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
OBB_HD double obb_box_intersection_area(const obb_box *a, const obb_box *b)
{
    const double bw = 0.5 * b->w, bh = 0.5 * b->h;
    const double aw = 0.5 * a->w, ah = 0.5 * a->h;
    const double dx = a->cx - b->cx, dy = a->cy - b->cy;
    /* Disjoint circumcircles: no overlap (cheap early exit, exact). */
    const double reach = sqrt(aw * aw + ah * ah) + sqrt(bw * bw + bh * bh);
    if (dx * dx + dy * dy > reach * reach) return 0.0;

    /* A's centre and axes in B's frame (rotate by -angle_b around B's centre). */
    const double cb = cos(b->a), sb = sin(b->a);
    const double ox = cb * dx + sb * dy, oy = -sb * dx + cb * dy;
    const double rel = a->a - b->a;
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
OBB_HD double obb_box_iou(const obb_box *a, const obb_box *b)
{
    if (!obb_box_valid(a) || !obb_box_valid(b)) return 0.0;
    const double area_a = a->w * a->h;
    const double area_b = b->w * b->h;
    double inter = obb_box_intersection_area(a, b);
    const double smaller = area_a < area_b ? area_a : area_b;
    if (inter > smaller) inter = smaller;
    const double uni = area_a + area_b - inter;
    if (!(uni > 0.0)) return 0.0;
    const double iou = inter / uni;
    /* NaN (an area product that overflowed to inf: inf / inf) is caught here too: it is not <= 1. */
    return iou >= 0.0 && iou <= 1.0 ? iou : (iou > 1.0 ? 1.0 : 0.0);
}

OBB_HD double obb_iou(const float *a, const float *b)
{
    const obb_box ba = obb_box_from_float(a), bb = obb_box_from_float(b);
    return obb_box_iou(&ba, &bb);
}

#endif /* OBBMETA_OBB_GEOMETRY_H */
