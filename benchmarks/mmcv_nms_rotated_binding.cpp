// Python binding for mmcv 2.2.0's CUDA rotated NMS, built by benchmarks/peers.py with
// torch.utils.cpp_extension.load together with .peers/mmcv/nms_rotated_cuda.cu (carried, never committed: see
// benchmarks/prepare_peers.sh). Only the entry point is declared here; mmcv's own host function does the work.
#include <torch/extension.h>

// Defined in mmcv's nms_rotated_cuda.cu (mmcv/ops/csrc/pytorch/cuda/). dets_sorted: the boxes in score order,
// (N, 5) xywhr, or (N, 6) with the label when multi_label is 1; returns order_t[kept rows].
at::Tensor nms_rotated_cuda(const at::Tensor dets, const at::Tensor scores, const at::Tensor order_t,
                            const at::Tensor dets_sorted, float iou_threshold, const int multi_label);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("nms_rotated_cuda", &nms_rotated_cuda, "mmcv 2.2.0 nms_rotated, CUDA", py::arg("dets"), py::arg("scores"),
        py::arg("order"), py::arg("dets_sorted"), py::arg("iou_threshold"), py::arg("multi_label"));
}
