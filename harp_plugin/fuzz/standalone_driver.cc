// Standalone fuzz driver for compilers without libFuzzer: mutates valid frames and random bytes
// and feeds them to LLVMFuzzerTestOneInput. Usage: harp_fuzz_wire [-max_total_time=S] [-seed=N]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  double seconds = 10;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "-max_total_time=", 16) == 0) seconds = atof(argv[i] + 16);
    if (strncmp(argv[i], "-seed=", 6) == 0) seed = strtoull(argv[i] + 6, nullptr, 10);
  }
  using namespace harp;
  std::vector<std::vector<uint8_t>> seeds;
  uint8_t sh[kServerHelloBytes], ch[kClientHelloBytes], v[kVerdictBytes], c[kChunkHeaderBytes];
  harpEncodeServerHello(ServerHello(), sh);
  ClientHello h;
  h.nflows = 4;
  h.chunk_bytes = 1 << 19;
  harpEncodeClientHello(h, sh, "fuzz-secret", ch);
  harpEncodeVerdict(Verdict(), ch, "fuzz-secret", v);
  harpEncodeChunkHeader(ChunkHeader{4096, 3, 0, 8192}, c);
  seeds.push_back(std::vector<uint8_t>(1, 0)), seeds.back().insert(seeds.back().end(), sh, sh + sizeof(sh));
  seeds.push_back(std::vector<uint8_t>(1, 1)), seeds.back().insert(seeds.back().end(), ch, ch + sizeof(ch));
  seeds.push_back(std::vector<uint8_t>(1, 2)), seeds.back().insert(seeds.back().end(), v, v + sizeof(v));
  seeds.push_back(std::vector<uint8_t>(1, 3)), seeds.back().insert(seeds.back().end(), c, c + sizeof(c));
  std::string prof = "\x04nic eth0 speed_mbps=100 numa=0\nHARP_NFLOWS = 4\n";
  seeds.emplace_back(prof.begin(), prof.end());
  std::mt19937_64 rng(seed);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int k = 0; k < 1000; ++k, ++runs) {
      std::vector<uint8_t> in = seeds[rng() % seeds.size()];
      int muts = 1 + static_cast<int>(rng() % 8);
      for (int m = 0; m < muts; ++m) {
        switch (rng() % 5) {
          case 0: if (!in.empty()) in[rng() % in.size()] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
          case 1: if (!in.empty()) in[rng() % in.size()] = static_cast<uint8_t>(rng()); break;
          case 2: if (!in.empty()) in.resize(rng() % in.size()); break;
          case 3: in.push_back(static_cast<uint8_t>(rng())); break;
          case 4: if (in.size() > 1) in[1 + rng() % (in.size() - 1)] = static_cast<uint8_t>(rng() % 3 ? 0 : 0xff); break;
        }
      }
      LLVMFuzzerTestOneInput(in.data(), in.size());
    }
  }
  printf("standalone fuzz: %llu inputs in %.0f s, no crash\n", static_cast<unsigned long long>(runs), seconds);
  return 0;
}
