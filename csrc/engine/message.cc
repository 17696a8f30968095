// Message: Writer/Reader helpers and the Request/Response encodings.
#include "engine/message.h"

#include <cstring>

#include "engine/op_traits.h"

namespace lightcc {
namespace {

class Writer {
 public:
  template <typename T>
  void pod(T v) {
    const char* p = reinterpret_cast<const char*>(&v);
    out_.append(p, sizeof(T));
  }
  void str(const std::string& s) {
    pod<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void ints(const std::vector<int64_t>& v) {
    pod<uint32_t>(static_cast<uint32_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& in, int peer) : in_(in), peer_(peer) {}
  template <typename T>
  bool pod(T* v) {
    if (pos_ + sizeof(T) > in_.size()) return fail("truncated");
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool count(uint32_t* n, size_t item_bytes) {
    if (!pod(n)) return false;
    if (*n > kMaxWireItems || pos_ + static_cast<size_t>(*n) * item_bytes > in_.size()) {
      return fail("length field " + std::to_string(*n) + " exceeds the message");
    }
    return true;
  }
  bool str(std::string* s) {
    uint32_t n;
    if (!count(&n, 1)) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool ints(std::vector<int64_t>* v) {
    uint32_t n;
    if (!count(&n, sizeof(int64_t))) return false;
    v->resize(n);
    std::memcpy(v->data(), in_.data() + pos_, n * sizeof(int64_t));
    pos_ += n * sizeof(int64_t);
    return true;
  }
  template <typename E>
  bool enumeration(E* e, int limit) {
    uint8_t raw;
    if (!pod(&raw)) return false;
    if (raw >= limit) return fail("enum value " + std::to_string(raw) + " out of range");
    *e = static_cast<E>(raw);
    return true;
  }
  bool fail(const std::string& why) {
    if (error_.empty()) {
      error_ = "malformed negotiation message from rank " + std::to_string(peer_) + " at byte " +
               std::to_string(pos_) + ": " + why;
    }
    return false;
  }
  bool atEnd() const { return pos_ == in_.size(); }
  const std::string& error() const { return error_; }

 private:
  const std::string& in_;
  int peer_;
  size_t pos_ = 0;
  std::string error_;
};

// The signature's 27 bytes, in the same place of a Request (after its rank) and a Response (first).
void writeSignature(Writer& w, const OpSignature& s) {
  w.pod<uint8_t>(static_cast<uint8_t>(s.op));
  w.pod<uint8_t>(static_cast<uint8_t>(s.dtype));
  w.pod<uint8_t>(static_cast<uint8_t>(s.reduce_op));
  w.pod<int32_t>(s.root);
  w.pod<int32_t>(s.process_set_id);
  w.pod<double>(s.prescale);
  w.pod<double>(s.postscale);
}

bool readSignature(Reader& rd, OpSignature* s) {
  return rd.enumeration(&s->op, kNumOpTypes) && rd.enumeration(&s->dtype, kNumDataTypes) &&
         rd.enumeration(&s->reduce_op, kNumReduceOps) && rd.pod(&s->root) && rd.pod(&s->process_set_id) &&
         rd.pod(&s->prescale) && rd.pod(&s->postscale);
}

void writeRequest(Writer& w, const Request& r) {
  w.pod<int32_t>(r.rank);
  writeSignature(w, r);
  w.str(r.name);
  w.ints(r.shape);
  w.ints(r.aux);
  w.str(r.error);
  w.pod<int32_t>(r.device);
}

bool readRequest(Reader& rd, Request* r) {
  return rd.pod(&r->rank) && readSignature(rd, r) && rd.str(&r->name) && rd.ints(&r->shape) && rd.ints(&r->aux) &&
         rd.str(&r->error) && rd.pod(&r->device);
}

void writeResponse(Writer& w, const Response& r) {
  writeSignature(w, r);
  w.pod<uint32_t>(static_cast<uint32_t>(r.names.size()));
  for (const auto& n : r.names) w.str(n);
  w.pod<uint32_t>(static_cast<uint32_t>(r.shapes.size()));
  for (const auto& s : r.shapes) w.ints(s);
  w.ints(r.first_dims);
  w.str(r.error);
  w.pod<int32_t>(r.last_joined);
  w.ints(r.aux);
  w.pod<uint8_t>(r.on_device ? 1 : 0);
}

bool readResponse(Reader& rd, Response* r) {
  if (!readSignature(rd, r)) return false;
  uint32_t n;
  if (!rd.count(&n, 4)) return false;
  r->names.resize(n);
  for (auto& name : r->names) {
    if (!rd.str(&name)) return false;
  }
  if (!rd.count(&n, 4)) return false;
  r->shapes.resize(n);
  for (auto& s : r->shapes) {
    if (!rd.ints(&s)) return false;
  }
  uint8_t on_device = 0;
  if (!(rd.ints(&r->first_dims) && rd.str(&r->error) && rd.pod(&r->last_joined) && rd.ints(&r->aux) &&
        rd.pod(&on_device))) {
    return false;
  }
  r->on_device = on_device != 0;
  return true;
}

template <typename T, typename ReadFn>
Status parseList(const std::string& bytes, int peer, uint32_t magic, size_t min_item,
                 ReadFn read, std::vector<T>* out) {
  Reader rd(bytes, peer);
  uint32_t m = 0, n = 0;
  if (!rd.pod(&m)) return Status::PeerFailure(rd.error());
  if (m != magic) {
    rd.fail("bad magic " + std::to_string(m));
    return Status::PeerFailure(rd.error());
  }
  if (!rd.count(&n, min_item)) return Status::PeerFailure(rd.error());
  out->clear();
  out->resize(n);
  for (auto& item : *out) {
    if (!read(rd, &item)) return Status::PeerFailure(rd.error());
  }
  if (!rd.atEnd()) {
    rd.fail("trailing bytes");
    return Status::PeerFailure(rd.error());
  }
  return Status::OK();
}

}  // namespace

std::string serializeRequests(const std::vector<Request>& requests) {
  Writer w;
  w.pod<uint32_t>(kRequestListMagic);
  w.pod<uint32_t>(static_cast<uint32_t>(requests.size()));
  for (const auto& r : requests) writeRequest(w, r);
  return w.take();
}

std::string serializeResponses(const std::vector<Response>& responses) {
  Writer w;
  w.pod<uint32_t>(kResponseListMagic);
  w.pod<uint32_t>(static_cast<uint32_t>(responses.size()));
  for (const auto& r : responses) writeResponse(w, r);
  return w.take();
}

Status parseRequests(const std::string& bytes, int peer, std::vector<Request>* out) {
  return parseList<Request>(bytes, peer, kRequestListMagic, 30, readRequest, out);
}

Status parseResponses(const std::string& bytes, int peer, std::vector<Response>* out) {
  return parseList<Response>(bytes, peer, kResponseListMagic, 30, readResponse, out);
}

const char* opTypeName(OpType op) {
  return isOpCode(static_cast<int>(op)) ? opTraits(op).name : "UNKNOWN";
}

}  // namespace lightcc
