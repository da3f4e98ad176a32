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
 *  - per-box trigonometry and bounds are computed once (obb_prep), and A's rotation into B's frame comes from
 *    them by the angle-difference identities (exactly the identity for equal angles);
 *  - the intersection is convex clipping (Sutherland-Hodgman) of box A, expressed in B's frame, against B's
 *    axis-aligned extent: no vertex sorting, no convex hull, hence none of the sort / FMA / missed-vertex bugs;
 *  - invalid boxes (non-finite values, w <= 0 or h <= 0) have area 0 and IoU 0 with everything;
 *  - the result is clamped to [0, 1] and can never be NaN.
 */
#ifndef OBBMETA_OBB_GEOMETRY_H
#define OBBMETA_OBB_GEOMETRY_H

#include <float.h>
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

/* The 4 corners (x0, y0, ..., x3, y3) in the documented order, from c = cos(b->a) and s = sin(b->a) (computed once
 * by a caller that needs several of these facts of one box). */
OBB_HD void obb_box_corners_cs(const obb_box *b, double c, double s, double out[8])
{
    const double hw = 0.5 * b->w, hh = 0.5 * b->h;
    const double sx[4] = {-1.0, 1.0, 1.0, -1.0};
    const double sy[4] = {-1.0, -1.0, 1.0, 1.0};
    for (int k = 0; k < 4; ++k) {
        const double lx = sx[k] * hw, ly = sy[k] * hh;
        out[2 * k] = b->cx + c * lx - s * ly;
        out[2 * k + 1] = b->cy + s * lx + c * ly;
    }
}

OBB_HD void obb_box_corners(const obb_box *b, double out[8])
{
    obb_box_corners_cs(b, cos(b->a), sin(b->a), out);
}

/* Tight axis-aligned box (x1, y1, x2, y2) around the polygon, from c = cos(b->a) and s = sin(b->a). */
OBB_HD void obb_box_aabb_cs(const obb_box *b, double c, double s, double out[4])
{
    c = fabs(c);
    s = fabs(s);
    const double hw = 0.5 * b->w, hh = 0.5 * b->h;
    const double ex = c * hw + s * hh, ey = s * hw + c * hh;
    out[0] = b->cx - ex;
    out[1] = b->cy - ey;
    out[2] = b->cx + ex;
    out[3] = b->cy + ey;
}

OBB_HD void obb_box_aabb(const obb_box *b, double out[4])
{
    obb_box_aabb_cs(b, cos(b->a), sin(b->a), out);
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
        const obb_point q = in[i + 1 < n ? i + 1 : 0]; /* (no modulo: on a GPU it is a division routine) */
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
        const obb_point q = p[i + 1 < n ? i + 1 : 0];
        twice += p[i].x * q.y - q.x * p[i].y;
    }
    return 0.5 * fabs(twice);
}

/* A box prepared once for many pairwise tests (NMS, IoU matrices): half sides, the trigonometry of its angle, its
 * area, circumradius and tight axis-aligned bounds. Every pairwise function below works on prepared boxes, so a box's
 * sin / cos are computed once per box, not once per pair, on the host and on the device alike. */
typedef struct {
    double cx, cy, hw, hh, a, c, s, area, radius;
    double x1, y1, x2, y2;
    int valid;
} obb_prep;

OBB_HD obb_prep obb_prep_make(const obb_box *b)
{
    obb_prep p;
    p.valid = obb_box_valid(b);
    p.cx = b->cx;
    p.cy = b->cy;
    p.hw = 0.5 * b->w;
    p.hh = 0.5 * b->h;
    p.a = b->a;
    p.c = cos(b->a);
    p.s = sin(b->a);
    p.area = b->w * b->h;
    p.radius = sqrt(p.hw * p.hw + p.hh * p.hh);
    const double ex = fabs(p.c) * p.hw + fabs(p.s) * p.hh, ey = fabs(p.s) * p.hw + fabs(p.c) * p.hh;
    p.x1 = b->cx - ex;
    p.y1 = b->cy - ey;
    p.x2 = b->cx + ex;
    p.y2 = b->cy + ey;
    return p;
}

/* Area of the intersection of two valid prepared boxes. */
OBB_HD double obb_prep_intersection_area(const obb_prep *a, const obb_prep *b)
{
    const double dx = a->cx - b->cx, dy = a->cy - b->cy;
    /* Disjoint circumcircles: no overlap (cheap early exit, exact). */
    const double reach = a->radius + b->radius;
    if (dx * dx + dy * dy > reach * reach) return 0.0;

    /* A's centre and axes in B's frame (rotate by -angle_b around B's centre). The relative rotation comes from the
     * prepared sines and cosines (angle-difference identities); equal angles give exactly (1, 0), so identical
     * boxes give exactly IoU 1 and equal-angle pairs are clipped without any rotation error. */
    const double ox = b->c * dx + b->s * dy, oy = -b->s * dx + b->c * dy;
    double c = 1.0, s = 0.0;
    if (a->a != b->a) {
        c = a->c * b->c + a->s * b->s;
        s = a->s * b->c - a->c * b->s;
    }
    const double aw = a->hw, ah = a->hh, bw = b->hw, bh = b->hh;
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

/* Exact IoU of two prepared boxes, in [0, 1]; 0 when either box is invalid. */
OBB_HD double obb_prep_iou(const obb_prep *a, const obb_prep *b)
{
    if (!a->valid || !b->valid) return 0.0;
    double inter = obb_prep_intersection_area(a, b);
    const double smaller = a->area < b->area ? a->area : b->area;
    if (inter > smaller) inter = smaller;
    const double uni = a->area + b->area - inter;
    if (!(uni > 0.0)) return 0.0;
    const double iou = inter / uni;
    /* NaN (an area product that overflowed to inf: inf / inf) is caught here too: it is not <= 1. */
    return iou >= 0.0 && iou <= 1.0 ? iou : (iou > 1.0 ? 1.0 : 0.0);
}

/* Exact IoU of two boxes, in [0, 1]; 0 when either box is invalid. */
OBB_HD double obb_box_iou(const obb_box *a, const obb_box *b)
{
    const obb_prep pa = obb_prep_make(a), pb = obb_prep_make(b);
    return obb_prep_iou(&pa, &pb);
}

/* An upper bound of IoU(k, r) from areas alone: the intersection is at most the smaller box and at most the overlap
 * of the two bounding boxes (widened by their rounding), and IoU grows with the intersection. */
OBB_HD double obb_prep_iou_bound(const obb_prep *k, const obb_prep *r)
{
    const double slack_x = 8.0 * DBL_EPSILON * (fabs(k->x1) + fabs(k->x2) + fabs(r->x1) + fabs(r->x2));
    const double slack_y = 8.0 * DBL_EPSILON * (fabs(k->y1) + fabs(k->y2) + fabs(r->y1) + fabs(r->y2));
    const double ow = fmin(k->x2, r->x2) - fmax(k->x1, r->x1) + slack_x;
    const double oh = fmin(k->y2, r->y2) - fmax(k->y1, r->y1) + slack_y;
    const double inter = fmin(fmin(k->area, r->area), ow * oh) * (1.0 + 1e-9);
    return inter / (k->area + r->area - inter);
}

/* Greedy NMS's one question, asked identically by the host scan and the CUDA mask kernel: does kept box k suppress
 * box r (IoU(k, r) > threshold, threshold >= 0)? Invalid boxes suppress nothing and are never suppressed; disjoint
 * bounding boxes, the area bound and the separating axes answer most pairs without the exact clipping. */
/* Separating-axis test: 1 when the two rectangles are certainly disjoint (separated along one of their four axes by
 * more than the rounding of the projections), so their IoU is 0. Rotated boxes whose bounding boxes meet often are. */
OBB_HD int obb_prep_separated(const obb_prep *a, const obb_prep *b)
{
    const double dx = b->cx - a->cx, dy = b->cy - a->cy;
    const double cc = fabs(a->c * b->c + a->s * b->s), cs = fabs(a->s * b->c - a->c * b->s);
    const double slack = 1e-9 * (fabs(dx) + fabs(dy) + a->radius + b->radius);
    /* a's axes (c, s) and (-s, c): b's half extents along them through |cos| and |sin| of the relative angle. */
    if (fabs(dx * a->c + dy * a->s) > a->hw + b->hw * cc + b->hh * cs + slack) return 1;
    if (fabs(-dx * a->s + dy * a->c) > a->hh + b->hw * cs + b->hh * cc + slack) return 1;
    /* b's axes: the same relative angle seen from b. */
    if (fabs(dx * b->c + dy * b->s) > b->hw + a->hw * cc + a->hh * cs + slack) return 1;
    if (fabs(-dx * b->s + dy * b->c) > b->hh + a->hw * cs + a->hh * cc + slack) return 1;
    return 0;
}

/* The cheap part of the question: 0 when the pair certainly does not suppress; 1 when only the exact IoU can tell. */
OBB_HD int obb_prep_may_suppress(const obb_prep *k, const obb_prep *r, double threshold)
{
    if (!k->valid || !r->valid) return 0;
    if (r->x1 > k->x2 || r->x2 < k->x1 || r->y1 > k->y2 || r->y2 < k->y1) return 0;
    if (obb_prep_iou_bound(k, r) < threshold * (1.0 - 1e-6)) return 0;
    return !obb_prep_separated(k, r);
}

OBB_HD int obb_prep_suppresses(const obb_prep *k, const obb_prep *r, double threshold)
{
    return obb_prep_may_suppress(k, r, threshold) && obb_prep_iou(k, r) > threshold;
}

OBB_HD double obb_iou(const float *a, const float *b)
{
    const obb_box ba = obb_box_from_float(a), bb = obb_box_from_float(b);
    return obb_box_iou(&ba, &bb);
}

#endif /* OBBMETA_OBB_GEOMETRY_H */
