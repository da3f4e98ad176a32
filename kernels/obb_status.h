/* obbmeta: the flags of the status word that the CUDA NMS and fused decode write (status[1]; status[0] is the kept
 * count, status[2] the candidate words the data needed) and that the padded results carry.
 *
 * Plain C, shared by the CUDA core (kernels/obbmeta_nms_core.cuh) and the host library (kernels/geometry_cpu.c),
 * which exports the values (obbmeta_geometry_abi_table) so obbmeta/geometry.py's STATUS_* are checked against
 * them when the library loads (obbmeta/_native.py). The CPU padded NMS and decode set the same flags from Python. */
#ifndef OBB_STATUS_H
#define OBB_STATUS_H

#define OBB_STATUS_BOXES 1    /* a box (the decodes: a candidate's) holds NaN / inf, or float64 values beyond 1e150 */
#define OBB_STATUS_SCORES 2   /* a score is NaN / inf (the decodes: a candidate's score is inf) */
#define OBB_STATUS_OVERFLOW 4 /* the candidate words outgrew the pool given: status[2] says how many were needed */
#define OBB_STATUS_CLASSES 8  /* end-to-end heads: a class above conf is not an id (set by obbmeta/decode, in Python
                                 only; listed here so that no kernel flag takes its bit) */

#endif
