// The outer-gradient codecs' CPU kernels for lightcc.torch.lowcomm: addresses in, the GIL released.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "bindings/errors.h"
#include "bindings/state.h"
#include "kernels/sparse_lowbit.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

kernels::SparseLowBitLayout layoutOf(size_t chunk, size_t k) {
  kernels::SparseLowBitLayout layout;
  raise(kernels::makeSparseLowBitLayout(chunk, k, &layout));
  return layout;
}

}  // namespace

void bindCodecs(py::module_& m) {
  m.def(
      "sparse_lowbit_row_bytes", [](size_t chunk, size_t k) { return layoutOf(chunk, k).rowBytes(); },
      py::arg("chunk"), py::arg("k"), "Bytes of one SparseLoCo row (kernels/sparse_lowbit.h).");
  m.def(
      "sparse_lowbit_encode",
      [](uintptr_t values, size_t count, size_t chunk, size_t k, uint64_t seed, uintptr_t wire, uintptr_t decoded) {
        const kernels::SparseLowBitLayout layout = layoutOf(chunk, k);
        py::gil_scoped_release released;
        thread_local kernels::SparseLowBitScratch scratch;
        kernels::encodeSparseLowBit(reinterpret_cast<const float*>(values), count, layout, seed,
                                    reinterpret_cast<uint8_t*>(wire), reinterpret_cast<float*>(decoded), scratch);
      },
      py::arg("values"), py::arg("count"), py::arg("chunk"), py::arg("k"), py::arg("seed"), py::arg("wire"),
      py::arg("decoded"),
      "Encode `count` float32 at `values` (the last chunk read as zero-padded) into rows = ceil(count / chunk) "
      "rows of row_bytes at `wire`; what a receiver decodes goes to `decoded` (rows x chunk float32). Addresses "
      "of host memory the caller sized.");
  m.def(
      "sparse_lowbit_add",
      [](uintptr_t wire, size_t rows, size_t chunk, size_t k, uintptr_t dst) {
        const kernels::SparseLowBitLayout layout = layoutOf(chunk, k);
        Status status;
        {
          py::gil_scoped_release released;
          thread_local std::vector<uint32_t> indices;
          status = kernels::addSparseLowBitRows(reinterpret_cast<const uint8_t*>(wire), rows, layout,
                                                reinterpret_cast<float*>(dst), indices);
        }
        // A peer's malformed row is refused as the torch codec refuses it, so both paths raise alike.
        if (!status.ok()) throw py::value_error(status.message());
      },
      py::arg("wire"), py::arg("rows"), py::arg("chunk"), py::arg("k"), py::arg("dst"),
      "dst (rows x chunk float32) += the rows at `wire`, decoded; ValueError naming a malformed row.");
}

}  // namespace lightcc::bindings
