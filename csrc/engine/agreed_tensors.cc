// AgreedTensors: marking a plan's tensors submitted, and taking their entries in plan order.
#include "engine/agreed_tensors.h"

namespace lightcc {

void AgreedTensors::markSubmitted(TensorTable& tensors, const std::vector<ResponsePtr>& responses, Timeline& timeline,
                                  bool trace) {
  for (size_t i = 0; i < ids_.size(); ++i) {
    const TensorId id = ids_[i];
    if (id < 0 || !tensors.at(id).pending) continue;
    if (trace) timeline.end(responses[i]->names.front());
    tensors.setState(id, TensorTable::State::kSubmitted);
  }
  hint_ = 0;
}

Batch AgreedTensors::take(TensorTable& tensors, const ResponsePtr& r) {
  Batch b;
  b.response = r;
  b.joined = joined_;
  b.entries.resize(r->names.size());
  for (size_t i = 0; i < r->names.size(); ++i) {
    // Plans mostly list tensors in agreed order, so the first agreed tensor not yet taken is
    // tried (a name compare) before the name is hashed.
    while (hint_ < ids_.size() && (ids_[hint_] < 0 || !tensors.at(ids_[hint_]).pending)) ++hint_;
    TensorId id = hint_ < ids_.size() ? ids_[hint_] : -1;
    if (id < 0 || tensors.at(id).set != r->process_set_id || tensors.at(id).name != r->names[i]) {
      id = tensors.find(r->process_set_id, r->names[i]);
    }
    if (id < 0 || !tensors.at(id).pending) continue;
    b.entries[i] = tensors.takePending(id);
  }
  return b;
}

}  // namespace lightcc
