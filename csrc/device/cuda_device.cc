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
  d->topk_ = CudaTopk(lib, d->stream_);
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
