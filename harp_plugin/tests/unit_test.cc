// Unit tests of the plugin's pure parts: SHA-256/HMAC vectors, wire frames, params and profile.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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
  EXPECT(harpParseProfile("HARP_NFLOWS = 6\n", &r, {"HARP_NFLOWS"}).empty() && r.nflows == 4);
  EXPECT(!harpParseProfile("HARP_JOB_SECRET = x\n", &r, {}).empty());
  EXPECT(!harpParseProfile("garbage line\n", &r, {}).empty());
}
}  // namespace

int main() {
  testSha();
  testWire();
  testParams();
  printf("unit: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
