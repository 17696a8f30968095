// Unit tests of the plugin's pure parts: SHA-256/HMAC vectors, wire frames, params and profile.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "flow_governor.h"
#include "harp/hmac.h"
#include "params.h"
#include "wire.h"

namespace {
int g_failed = 0, g_passed = 0;
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (cond) { ++g_passed; } else {                                   \
      ++g_failed;                                                      \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
    }                                                                  \
  } while (0)

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) { snprintf(b, sizeof(b), "%02x", p[i]); s += b; }
  return s;
}

void testSha() {
  uint8_t out[32];
  harp::Sha256 a;
  a.update("abc", 3);
  a.finish(out);
  EXPECT(hex(out, 32) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  harp::Sha256 b;
  std::string m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  b.update(m.data(), m.size());
  b.finish(out);
  EXPECT(hex(out, 32) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // RFC 4231 test cases 1 and 2.
  uint8_t key[20];
  memset(key, 0x0b, sizeof(key));
  harp::HmacSha256 h1(key, sizeof(key));
  h1.update("Hi There", 8);
  h1.finish(out);
  EXPECT(hex(out, 32) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  harp::HmacSha256 h2("Jefe", 4);
  h2.update("what do ya want for nothing?", 28);
  h2.finish(out);
  EXPECT(hex(out, 32) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

void testWire() {
  using namespace harp;
  ServerHello sh;
  sh.flags = kFlagAuth;
  sh.listen_id = 42;
  memset(sh.nonce, 7, sizeof(sh.nonce));
  uint8_t shb[kServerHelloBytes];
  harpEncodeServerHello(sh, shb);
  ServerHello sh2;
  EXPECT(harpDecodeServerHello(shb, sizeof(shb), &sh2) == Refusal::kNone && sh2.listen_id == 42);
  ClientHello ch;
  ch.flags = kFlagAuth;
  ch.comm_id = 99;
  ch.flow_idx = 1;
  ch.nflows = 4;
  ch.chunk_bytes = 1 << 19;
  uint8_t chb[kClientHelloBytes];
  harpEncodeClientHello(ch, shb, "secret", chb);
  ClientHello ch2;
  EXPECT(harpDecodeClientHello(chb, sizeof(chb), &ch2) == Refusal::kNone && ch2.comm_id == 99);
  EXPECT(harpVerifyClientMac(shb, chb, "secret"));
  EXPECT(!harpVerifyClientMac(shb, chb, "other"));
  shb[9] ^= 1;  // a different server nonce: replaying the hello fails
  EXPECT(!harpVerifyClientMac(shb, chb, "secret"));
  chb[4] = 99;  // wrong version
  EXPECT(harpDecodeClientHello(chb, sizeof(chb), &ch2) == Refusal::kBadVersion);
  chb[4] = 1;
  chb[0] ^= 0xff;
  EXPECT(harpDecodeClientHello(chb, sizeof(chb), &ch2) == Refusal::kBadMagic);
  chb[0] ^= 0xff;
  EXPECT(harpDecodeClientHello(chb, 20, &ch2) == Refusal::kBadFrame);
  ch.flow_idx = 4;  // index >= nflows
  harpEncodeClientHello(ch, shb, "", chb);
  EXPECT(harpDecodeClientHello(chb, sizeof(chb), &ch2) == Refusal::kBadFlow);
  Verdict v;
  v.accepted = true;
  uint8_t vb[kVerdictBytes];
  harpEncodeClientHello(ClientHello(), shb, "", chb);
  harpEncodeVerdict(v, chb, "k", vb);
  Verdict v2;
  EXPECT(harpDecodeVerdict(vb, sizeof(vb), &v2) == Refusal::kNone && v2.accepted);
  EXPECT(harpVerifyVerdictMac(chb, vb, "k") && !harpVerifyVerdictMac(chb, vb, "j"));
  ChunkHeader c{100, 5, 200, 300}, c2;
  uint8_t cb[kChunkHeaderBytes];
  harpEncodeChunkHeader(c, cb);
  EXPECT(harpDecodeChunkHeader(cb, sizeof(cb), 1 << 20, &c2).empty() && c2.seq == 5 && c2.total == 300);
  EXPECT(!harpDecodeChunkHeader(cb, sizeof(cb), 50, &c2).empty());  // longer than the chunk size
  c.offset = 250;
  harpEncodeChunkHeader(c, cb);
  EXPECT(!harpDecodeChunkHeader(cb, sizeof(cb), 1 << 20, &c2).empty());  // beyond the message
}

void testParams() {
  using namespace harp;
  Params p;
  setenv("HARP_NFLOWS", "8", 1);
  setenv("HARP_CHUNK_BYTES", "256K", 1);
  setenv("HARP_CORES", "0,1", 1);
  EXPECT(harpParseParams(&p).empty() && p.nflows == 8 && p.transfer.chunk_bytes == 256 * 1024 && p.instances.cores.size() == 2);
  setenv("HARP_NFLOWS", "0", 1);
  std::string err = harpParseParams(&p);
  EXPECT(err.find("HARP_NFLOWS") != std::string::npos);
  unsetenv("HARP_NFLOWS");
  setenv("HARP_ZC", "sometimes", 1);
  EXPECT(harpParseParams(&p).find("HARP_ZC") != std::string::npos);
  unsetenv("HARP_ZC");
  setenv("HARP_BUSY_POLL_US", "200", 1);
  EXPECT(harpParseParams(&p).empty() && p.instances.busy_poll_us == 200);
  for (const char* v : {"-1", "fast", "2000000", "10us"}) {
    setenv("HARP_BUSY_POLL_US", v, 1);
    EXPECT(harpParseParams(&p).find("HARP_BUSY_POLL_US") != std::string::npos);
  }
  unsetenv("HARP_BUSY_POLL_US");
  setenv("HARP_CORES", "off", 1);
  EXPECT(harpParseParams(&p).empty() && !p.instances.pin && p.instances.cores.empty());
  setenv("HARP_CORES", "0,of", 1);
  EXPECT(harpParseParams(&p).find("HARP_CORES") != std::string::npos);
  unsetenv("HARP_CORES");
  Params q;
  std::string prof = "# profile\nnic eth1 speed_mbps=25000 numa=1 pci=0000:00:05.0\nHARP_IFNAME = eth1\nHARP_NFLOWS = 6\n";
  EXPECT(harpParseProfile(prof, &q, {}).empty() && q.interfaces.ifname == "eth1" && q.nflows == 6 &&
         q.interfaces.profile_nics.size() == 1 && q.interfaces.profile_nics[0].speed_mbps == 25000);
  Params r;
  EXPECT(harpParseProfile("HARP_NFLOWS = 6\n", &r, {"HARP_NFLOWS"}).empty() && r.nflows == 8);
  EXPECT(!harpParseProfile("HARP_JOB_SECRET = x\n", &r, {}).empty());
  EXPECT(!harpParseProfile("garbage line\n", &r, {}).empty());
}

// A path whose rate with k flows is min(k * per_flow, link), each window's rate off by up to
// +-noise (a fixed pseudo-random sequence): where the governor settles, and how often it moves.
struct GovernorRun {
  int final_active;
  int min_active;
  int max_active;
};

GovernorRun runGovernor(int max_flows, double per_flow, double link, double noise, int windows) {
  harp::FlowGovernor g;
  g.configure(max_flows, harp::FlowGovernor::kStartFlows, true);
  GovernorRun r{g.active(), g.active(), g.active()};
  uint64_t delivered = 0;
  double t = 0;
  uint32_t lcg = 12345;
  g.tick(true, t);
  const double step = harp::FlowGovernor::kWindowSeconds / 4;
  for (int w = 0; w < windows * 4; ++w) {
    lcg = lcg * 1664525u + 1013904223u;
    const double jitter = 1 + noise * ((lcg >> 8) / double(1 << 24) * 2 - 1);
    const double rate = std::min(g.active() * per_flow, link) * jitter;
    delivered += static_cast<uint64_t>(rate * step);
    t += step;
    if (g.tick(true, t)) g.closeWindow(delivered);
    r.min_active = std::min(r.min_active, g.active());
    r.max_active = std::max(r.max_active, g.active());
  }
  r.final_active = g.active();
  return r;
}

void testFlowGovernor() {
  using harp::FlowGovernor;
  // A cap per flow (500 Mbit/s flows, 2 and 4 Gbit/s links): grows to link / cap, and no further
  // than a flow pays.
  GovernorRun capped = runGovernor(16, 62.5e6, 250e6, 0.02, 200);
  EXPECT(capped.final_active >= 4 && capped.max_active <= 5);
  GovernorRun capped8 = runGovernor(16, 62.5e6, 500e6, 0.02, 200);
  EXPECT(capped8.final_active >= 8 && capped8.final_active <= 9);
  // One aggregate cap that one flow fills: settles at one or two, never above the start.
  GovernorRun aggregate = runGovernor(8, 200e6, 125e6, 0.02, 200);
  EXPECT(aggregate.final_active <= 2 && aggregate.max_active <= FlowGovernor::kStartFlows + 1);
  // More flows than opened cannot be asked for; one flow opened never moves.
  GovernorRun few = runGovernor(3, 10e6, 1e9, 0.0, 100);
  EXPECT(few.final_active == 3 && few.max_active == 3);
  GovernorRun one = runGovernor(1, 10e6, 1e9, 0.0, 50);
  EXPECT(one.final_active == 1 && one.max_active == 1);
  // Off: every opened flow, always.
  FlowGovernor off;
  off.configure(8, 4, false);
  EXPECT(off.active() == 8 && !off.tick(true, 0) && !off.tick(true, 10) && off.active() == 8);
  // Idle time is not a slow path: a lane idle between bursts is judged on its busy time only.
  FlowGovernor g;
  g.configure(8, 4, true);
  g.tick(false, 0);
  EXPECT(!g.tick(false, 100.0) && g.active() == 4);  // 100 s idle: no window is due
  // The first window is the baseline: no decision, whatever it measured.
  EXPECT(!g.tick(true, 101.0) && g.tick(true, 102.0) && !g.closeWindow(1 << 30) && g.active() == 4);
}
}  // namespace

int main() {
  testSha();
  testWire();
  testParams();
  testFlowGovernor();
  printf("unit: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
