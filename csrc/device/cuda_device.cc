// CudaDevice: stream-ordered memory, events and kernels on one GPU, all through liblightcc_cuda.so.
#include "device/cuda_device.h"

namespace lightcc::device {
namespace {

class CudaMemory : public Buffer {
 public:
  CudaMemory(const CudaLibrary* lib, void* p, size_t bytes, int ordinal)
      : lib_(lib), p_(p), bytes_(bytes), ordinal_(ordinal) {}
  ~CudaMemory() override { lib_->rt->free(p_); }
  void* data() const override { return p_; }
  size_t size() const override { return bytes_; }
  int device() const override { return ordinal_; }
  Status download(void* host, size_t bytes) const override { return copyNow(host, p_, bytes); }
  Status upload(const void* host, size_t bytes) override { return copyNow(p_, host, bytes); }

 private:
  Status copyNow(void* dst, const void* src, size_t bytes) const {
    LIGHTCC_RETURN_IF_ERROR(lib_->rt->setDevice(ordinal_));
    LIGHTCC_RETURN_IF_ERROR(lib_->rt->memcpyAsync(dst, src, bytes, nullptr));
    return lib_->rt->streamSynchronize(nullptr);
  }
  const CudaLibrary* lib_;
  void* p_;
  size_t bytes_;
  int ordinal_;
};

class CudaEvent : public Event {
 public:
  CudaEvent(const CudaLibrary* lib, void* e) : lib_(lib), e_(e) {}
  ~CudaEvent() override { lib_->rt->eventDestroy(e_); }
  Status query(bool* done) override { return lib_->rt->eventQuery(e_, done); }
  Status synchronize() override { return lib_->rt->eventSynchronize(e_); }
  Status orderStream(void* stream) override { return lib_->rt->streamWaitEvent(stream, e_); }
  void* raw() const { return e_; }

 private:
  const CudaLibrary* lib_;
  void* e_;
};

Status recordEvent(const CudaLibrary* lib, void* stream, EventPtr* out) {
  void* e = nullptr;
  LIGHTCC_RETURN_IF_ERROR(lib->rt->eventCreate(&e));
  auto ev = std::make_shared<CudaEvent>(lib, e);
  LIGHTCC_RETURN_IF_ERROR(lib->rt->eventRecord(e, stream));
  *out = std::move(ev);
  return Status::OK();
}

Status noLibrary(const std::string& why) { return Status::PreconditionFailed("GPU tensors: " + why); }

}  // namespace

Status CudaDevice::create(int ordinal, std::unique_ptr<CudaDevice>* out) {
  std::string why;
  const CudaLibrary* lib = CudaLibrary::get(&why);
  if (lib == nullptr) return noLibrary(why);
  std::unique_ptr<CudaDevice> d(new CudaDevice(lib, ordinal));
  LIGHTCC_RETURN_IF_ERROR(d->activate());
  LIGHTCC_RETURN_IF_ERROR(lib->rt->streamCreate(&d->stream_));
  *out = std::move(d);
  return Status::OK();
}

CudaDevice::~CudaDevice() {
  if (stream_ != nullptr) {
    lib_->rt->streamSynchronize(stream_);
    lib_->rt->streamDestroy(stream_);
  }
}

Status CudaDevice::activate() const { return lib_->rt->setDevice(ordinal_); }

Status CudaDevice::allocate(size_t bytes, BufferPtr* out) {
  void* p = nullptr;
  // Never a zero-byte allocation: callers hand out the pointer as a tensor's data.
  LIGHTCC_RETURN_IF_ERROR(lib_->rt->malloc(&p, bytes > 0 ? bytes : 16)
                              .withContext("allocating " + std::to_string(bytes) + " bytes on " + describe()));
  *out = std::make_shared<CudaMemory>(lib_, p, bytes, ordinal_);
  return Status::OK();
}

Status CudaDevice::waitFor(const EventPtr& event) {
  if (!event) return Status::OK();
  return event->orderStream(stream_);
}

Status CudaDevice::record(EventPtr* out) { return recordEvent(lib_, stream_, out); }

Status CudaDevice::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return Status::OK();
  return lib_->rt->memcpyAsync(dst, src, bytes, stream_);
}

Status CudaDevice::zero(void* dst, size_t bytes) {
  if (bytes == 0) return Status::OK();
  return lib_->rt->memsetAsync(dst, 0, bytes, stream_);
}

Status CudaDevice::pack(void* buffer, const std::vector<Segment>& segments) {
  std::vector<cuda::CudaSegment> copies;
  copies.reserve(segments.size());
  for (const auto& s : segments) {
    if (s.ptr == nullptr) {
      LIGHTCC_RETURN_IF_ERROR(zero(static_cast<char*>(buffer) + s.offset, s.bytes));
    } else if (s.bytes > 0) {
      copies.push_back({s.ptr, s.offset, s.bytes});
    }
  }
  if (copies.empty()) return Status::OK();
  return lib_->topk->pack(buffer, copies.data(), static_cast<int>(copies.size()), stream_);
}

Status CudaDevice::unpack(const void* buffer, const std::vector<Segment>& segments) {
  std::vector<cuda::CudaSegment> copies;
  copies.reserve(segments.size());
  for (const auto& s : segments) {
    if (s.ptr != nullptr && s.bytes > 0) copies.push_back({s.ptr, s.offset, s.bytes});
  }
  if (copies.empty()) return Status::OK();
  return lib_->topk->unpack(buffer, copies.data(), static_cast<int>(copies.size()), stream_);
}

Status CudaDevice::scale(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  if (count == 0) return Status::OK();
  return lib_->reduce->scale(dst, src, count, dtype, factor, stream_);
}

Status CudaDevice::divideIntegers(void* data, size_t count, DataType dtype, int64_t divisor) {
  if (count == 0 || divisor == 1 || isFloatType(dtype)) return Status::OK();
  return lib_->rt->divideIntegers(data, count, dtype, static_cast<long long>(divisor), stream_);
}

Status CudaDevice::selectTopk(const float* values, size_t count, size_t k, uint32_t* indices, float* selected,
                              void* workspace, size_t workspace_bytes) {
  if (k == 0) return Status::OK();
  return lib_->topk->selectTopk(values, DataType::kFloat32, count, k, indices, selected, workspace,
                                workspace_bytes, stream_);
}

Status CudaDevice::scatterAddRanks(float* dst, size_t count, const std::vector<const uint32_t*>& indices,
                                   const std::vector<const void*>& values, DataType dtype, size_t k) {
  if (k == 0) return Status::OK();
  // Out-of-range indices from a corrupt peer are skipped on the device and counted; the count is
  // not read back here (that would be a host wait on the data path).
  return lib_->topk->scatterAddRanks(dst, count, indices.data(), values.data(), dtype,
                                     static_cast<int>(indices.size()), k, nullptr, stream_);
}

Status CudaDevice::accumulateResidual(float* residual, const void* grad, DataType dtype, size_t count, float scale) {
  if (count == 0) return Status::OK();
  return lib_->topk->accumulateResidual(residual, grad, dtype, count, scale, stream_);
}

Status CudaDevice::clearSelected(float* residual, const uint32_t* indices, size_t k) {
  if (k == 0) return Status::OK();
  return lib_->topk->clearSelected(residual, indices, k, stream_);
}

Status CudaDevice::momentumCorrect(float* u, float* v, const void* grad, DataType dtype, size_t count,
                                   float momentum) {
  if (count == 0) return Status::OK();
  return lib_->topk->momentumCorrect(u, v, grad, dtype, count, momentum, stream_);
}

Status CudaDevice::roundSelected(float* residual, const uint32_t* indices, const float* selected, void* wire,
                                 DataType dtype, size_t k) {
  return lib_->topk->roundSelected(residual, indices, selected, wire, dtype, k, stream_);
}

Status CudaDevice::fromFloat(void* dst, const float* src, size_t count, DataType dtype) {
  return lib_->topk->fromFloat(dst, src, count, dtype, stream_);
}

Status CudaDevice::dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                                 float momentum, bool nesterov) {
  return lib_->train->dgcAccumulate(u, v, grad, dtype, count, scale, momentum, nesterov, stream_);
}

Status CudaDevice::mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val,
                              size_t n, DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank) {
  return lib_->merge->mergeUnion(a_idx, a_val, b_idx, b_val, n, dtype, slot_idx, slot_val, slot_rank, stream_);
}

Status CudaDevice::gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                               DataType dtype, uint32_t* out_idx, void* out_val) {
  return lib_->merge->gatherSlots(slot_idx, slot_val, pos, k, dtype, out_idx, out_val, stream_);
}

Status CudaDevice::markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped) {
  return lib_->merge->markDropped(list, n, watched, m, dropped, stream_);
}

Status CudaDevice::offsetIndices(uint32_t* idx, size_t n, uint32_t offset) {
  if (n == 0 || offset == 0) return Status::OK();
  return lib_->merge->offsetIndices(idx, n, offset, stream_);
}

Status CudaDevice::restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype,
                                  const uint8_t* dropped, size_t n) {
  return lib_->merge->restoreDropped(residual, idx, val, dtype, dropped, n, stream_);
}

Status CudaDevice::placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val,
                              size_t n) {
  return lib_->merge->placePairs(out, count, dtype, idx, val, n, stream_);
}

Status recordOnStream(int ordinal, void* stream, EventPtr* out) {
  std::string why;
  const CudaLibrary* lib = CudaLibrary::get(&why);
  if (lib == nullptr) return noLibrary(why);
  LIGHTCC_RETURN_IF_ERROR(lib->rt->setDevice(ordinal));
  return recordEvent(lib, stream, out);
}

Status orderStream(int ordinal, void* stream, const EventPtr& event) {
  std::string why;
  const CudaLibrary* lib = CudaLibrary::get(&why);
  if (lib == nullptr) return noLibrary(why);
  LIGHTCC_RETURN_IF_ERROR(lib->rt->setDevice(ordinal));
  return event->orderStream(stream);
}

}  // namespace lightcc::device
