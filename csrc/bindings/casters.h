// casters.h: pybind11 conversion of the fronts' 14-tuple into bindings::TensorArgs.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <tuple>
#include <utility>

#include "bindings/tensor_args.h"

namespace pybind11::detail {

template <>
struct type_caster<lightcc::bindings::TensorArgs> {
  // The tuple's element types, in the fronts' order (tensor_args.h).
  using Tuple = std::tuple<int, std::string, uintptr_t, uintptr_t, int, std::vector<int64_t>, int, int, double,
                           double, int, std::vector<int64_t>, int, uintptr_t>;

  PYBIND11_TYPE_CASTER(lightcc::bindings::TensorArgs, const_name("tuple"));

  bool load(handle src, bool convert) {
    make_caster<Tuple> inner;
    if (!inner.load(src, convert)) return false;
    auto&& [op, name, in, out, dtype, shape, reduce_op, root, pre, post, ps, aux, device, stream] =
        cast_op<Tuple&&>(std::move(inner));
    value = lightcc::bindings::TensorArgs{op,  std::move(name), dtype, std::move(shape), reduce_op, root, pre, post,
                                          ps,  std::move(aux),  lightcc::bindings::TensorMemory{in, out, device, stream}};
    return true;
  }

  static handle cast(const lightcc::bindings::TensorArgs& t, return_value_policy policy, handle parent) {
    const lightcc::bindings::TensorMemory& m = t.memory;
    return make_caster<Tuple>::cast(Tuple{t.op, t.name, m.input, m.output, t.dtype, t.shape, t.reduce_op, t.root,
                                          t.prescale, t.postscale, t.process_set_id, t.aux, m.device, m.stream},
                                    policy, parent);
  }
};

}  // namespace pybind11::detail
