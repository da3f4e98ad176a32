/* obbmeta: rotated-box outline rasterisation, one definition for the host (C) and the device (CUDA).
 *
 * A pixel (x, y) belongs to a box's outline when its centre (x + 0.5, y + 0.5) lies within thickness / 2 of one
 * of the box's four edges (each edge is a capsule: a segment thickened by a disc). Each edge is walked along its
 * major axis (|slope| <= 1 along it), and for each major pixel index only the few minor pixels inside the band
 * around the edge's line are tested, so the work is O(edge length x thickness), not O(box area).
 */
#ifndef OBBMETA_OBB_DRAW_H
#define OBBMETA_OBB_DRAW_H

#include "obb_geometry.h"

/* Squared distance from (px, py) to the segment a-b. */
OBB_HD double obb_segment_dist2(double px, double py, double ax, double ay, double bx, double by)
{
    const double dx = bx - ax, dy = by - ay;
    const double len2 = dx * dx + dy * dy;
    double t = len2 > 0.0 ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0.0;
    t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    const double ex = ax + t * dx - px, ey = ay + t * dy - py;
    return ex * ex + ey * ey;
}

/* Integer pixel indices whose centres lie in [lo, hi], clipped to [0, limit - 1]; returns 0 when empty.
 * Works on doubles first so that huge or far-away coordinates never overflow an int. */
OBB_HD int obb_pixel_span(double lo, double hi, int limit, int *first, int *last)
{
    double f = ceil(lo - 0.5), l = floor(hi - 0.5);
    if (f < 0.0) f = 0.0;
    if (l > (double)(limit - 1)) l = (double)(limit - 1);
    if (!(f <= l)) return 0;
    *first = (int)f;
    *last = (int)l;
    return 1;
}

typedef struct {
    double ax, ay, bx, by; /* the edge's end points */
    double r;              /* half thickness */
    int major_is_x;        /* walk columns (1) or rows (0) */
    int m0, m1;            /* major pixel range, already clipped to the image */
} obb_edge;

/* Prepare edge k (0..3, from corner k to corner k+1) of box b; returns 0 when it misses the image or when the box
 * has a NaN/inf value (such boxes are not drawn). */
OBB_HD int obb_edge_setup(const float *b, int k, double thickness, int width, int height, obb_edge *e)
{
    if (!(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) && isfinite(b[3]) && isfinite(b[4]))) return 0;
    double c[8];
    obb_corners(b, c);
    const int k1 = (k + 1) & 3;
    e->ax = c[2 * k];
    e->ay = c[2 * k + 1];
    e->bx = c[2 * k1];
    e->by = c[2 * k1 + 1];
    e->r = 0.5 * thickness;
    e->major_is_x = fabs(e->bx - e->ax) >= fabs(e->by - e->ay);
    const double a = e->major_is_x ? e->ax : e->ay, bb = e->major_is_x ? e->bx : e->by;
    const double lo = (a < bb ? a : bb) - e->r, hi = (a < bb ? bb : a) + e->r;
    return obb_pixel_span(lo, hi, e->major_is_x ? width : height, &e->m0, &e->m1);
}

/* For major pixel index m of edge e, the minor pixel range that can be inside the edge's band. */
OBB_HD int obb_edge_minor_span(const obb_edge *e, int m, int width, int height, int *lo, int *hi)
{
    const double u = (double)m + 0.5;
    const double a_major = e->major_is_x ? e->ax : e->ay, a_minor = e->major_is_x ? e->ay : e->ax;
    const double b_major = e->major_is_x ? e->bx : e->by, b_minor = e->major_is_x ? e->by : e->bx;
    const double run = b_major - a_major;
    double v, half;
    if (run != 0.0) {
        const double slope = (b_minor - a_minor) / run; /* |slope| <= 1 by choice of the major axis */
        v = a_minor + (u - a_major) * slope;
        half = e->r * sqrt(1.0 + slope * slope); /* the band of distance r around the line, along the minor axis */
    } else { /* a zero-length edge: the capsule is a disc */
        v = a_minor;
        half = e->r;
    }
    return obb_pixel_span(v - half, v + half, e->major_is_x ? height : width, lo, hi);
}

/* Does pixel (x, y) belong to edge e's capsule? */
OBB_HD int obb_edge_covers(const obb_edge *e, int x, int y)
{
    return obb_segment_dist2((double)x + 0.5, (double)y + 0.5, e->ax, e->ay, e->bx, e->by) <= e->r * e->r;
}

#endif /* OBBMETA_OBB_DRAW_H */
