// Fuzz target: every parser that sees peer- or user-controlled bytes (handshake frames, chunk
// headers, MAC checks, the harp-setup profile). Must never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "params.h"
#include "wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using namespace harp;
  uint8_t sel = data[0];
  const uint8_t* p = data + 1;
  size_t n = size - 1;
  // Copy to an exact-size heap buffer so ASan catches any read past n.
  std::vector<uint8_t> buf(p, p + n);
  const uint8_t* b = buf.data();
  switch (sel % 5) {
    case 0: {
      ServerHello h;
      harpDecodeServerHello(b, n, &h);
      break;
    }
    case 1: {
      ClientHello h;
      if (harpDecodeClientHello(b, n, &h) == Refusal::kNone && n >= kClientHelloBytes) {
        uint8_t sh[kServerHelloBytes] = {};
        harpVerifyClientMac(sh, b, "fuzz-secret");
      }
      break;
    }
    case 2: {
      Verdict v;
      if (harpDecodeVerdict(b, n, &v) == Refusal::kNone && n >= kVerdictBytes) {
        uint8_t ch[kClientHelloBytes] = {};
        harpVerifyVerdictMac(ch, b, "fuzz-secret");
      }
      break;
    }
    case 3: {
      ChunkHeader c;
      std::string err = harpDecodeChunkHeader(b, n, 1u << 20, &c);
      if (err.empty() && (c.offset + c.len > c.total || c.len > (1u << 20))) __builtin_trap();
      break;
    }
    case 4: {
      Params params;
      harpParseProfile(std::string(reinterpret_cast<const char*>(b), n), &params, {});
      break;
    }
  }
  for (int k = 0; k < 3; ++k) harpCheckPrefix(b, n, static_cast<FrameKind>(k + 1));
  return 0;
}
