// op_spec.cc: the core's tables of ops, reduce ops and dtypes, exported once for every Python front.
//
// lightcc/common/op_spec.py reads this at import and derives every op code, reduce op, argument
// rule and TensorArgs builder from it, so no front restates a fact the core holds; a test
// (tests/single/test_op_spec.py) pins the Python names to these rows.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/state.h"
#include "common/dtype.h"
#include "engine/op_traits.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

const char* shapeRuleName(ShapeRule rule) {
  switch (rule) {
    case ShapeRule::kNone: return "none";
    case ShapeRule::kAll: return "all";
    case ShapeRule::kTrailing: return "trailing";
  }
  return "unknown";
}

const char* busBwName(BusBw kind) {
  switch (kind) {
    case BusBw::kNone: return "none";
    case BusBw::kWhole: return "whole";
    case BusBw::kChunked: return "chunked";
    case BusBw::kReduced: return "reduced";
  }
  return "unknown";
}

py::list opRows() {
  py::list rows;
  for (const OpTraits& t : kOpTraits) {
    py::dict row;
    row["code"] = static_cast<int>(t.op);
    row["name"] = t.name;
    row["label"] = t.label;
    row["moves_data"] = t.moves_data;
    row["can_fuse"] = t.can_fuse;
    row["has_root"] = t.args.has_root;
    row["takes_splits"] = t.args.takes_splits;
    row["agrees_aux"] = t.args.agrees_aux;
    row["needs_dim"] = t.args.needs_dim;
    row["shapes"] = shapeRuleName(t.args.shapes);
    py::list reduce_ops;
    for (int r = 0; r < kNumReduceOps; ++r) {
      if (supportsReduceOp(t.op, static_cast<ReduceOp>(r))) reduce_ops.append(r);
    }
    row["reduce_ops"] = reduce_ops;
    row["caller_stream_event"] = t.caller_stream_event;
    row["runs_with_joined"] = t.runs_with_joined;
    row["changes_sets"] = t.changes_sets;
    row["bus_bw"] = busBwName(t.bus_bw);
    rows.append(row);
  }
  return rows;
}

py::list reduceOpRows() {
  py::list rows;
  for (int code = 0; isValidReduceOp(code); ++code) {
    py::dict row;
    row["code"] = code;
    row["name"] = reduceOpName(static_cast<ReduceOp>(code));
    row["bitwise"] = isBitwiseOp(static_cast<ReduceOp>(code));
    rows.append(row);
  }
  return rows;
}

py::list dtypeRows() {
  py::list rows;
  for (int code = 0; isValidDataType(code); ++code) {
    py::dict row;
    row["code"] = code;
    row["name"] = dtypeName(static_cast<DataType>(code));
    row["size"] = dtypeSize(static_cast<DataType>(code));
    row["is_float"] = isFloatType(static_cast<DataType>(code));
    rows.append(row);
  }
  return rows;
}

}  // namespace

void bindOpSpec(py::module_& m) {
  m.def("op_spec", [] {
    py::dict spec;
    spec["ops"] = opRows();
    spec["reduce_ops"] = reduceOpRows();
    spec["dtypes"] = dtypeRows();
    return spec;
  }, "The core's op traits (engine/op_traits.h), reduce ops and dtypes (common/dtype.h), one row each.");
}

}  // namespace lightcc::bindings
