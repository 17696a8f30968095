// Cost model: the init-time ping-pong probe, the least-squares fit, and the collective formulas.
#include "engine/cost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "algorithms/sparse_allreduce.h"
#include "kernels/topk.h"

namespace lightcc {
namespace {

using Clock = std::chrono::steady_clock;

// Sizes span latency-bound to bandwidth-bound; 1 MiB is past a tbf/NIC burst so beta is the
// sustained rate. Few repetitions, and the fastest of them: on a busy machine a round trip also
// waits for the peer to be scheduled (seen: the median of three 1 MiB shared-memory round trips
// at 2.8 ns/B on 2 cores running 12 processes), which would price shared memory near the network
// and turn the 2D choice off (two_d_choice.h); the fastest is what the copies cost.
const std::vector<size_t> kProbeBytes = {64, 64 << 10, 1 << 20};
int repsFor(size_t bytes) { return bytes >= (1 << 20) ? 4 : 5; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One-way time per size between me and `peer` (rank 0 leads); only the two ranks call this.
Status pingPong(const SetComm& world, int peer, bool lead, std::vector<double>* one_way) {
  Link* link = world.link(peer);
  std::vector<char> buf(kProbeBytes.back());
  one_way->clear();
  for (size_t bytes : kProbeBytes) {
    std::vector<double> samples;
    for (int i = 0; i < repsFor(bytes) + 1; ++i) {  // the first round trip warms the path
      std::vector<P2POp> first = {{link, lead, buf.data(), bytes}};
      std::vector<P2POp> second = {{link, !lead, buf.data(), bytes}};
      const auto t0 = Clock::now();
      LIGHTCC_RETURN_IF_ERROR(runP2P(world, first, "cost-model probe with rank " + std::to_string(peer)));
      LIGHTCC_RETURN_IF_ERROR(runP2P(world, second, "cost-model probe with rank " + std::to_string(peer)));
      if (i > 0) samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / 2);
    }
    one_way->push_back(*std::min_element(samples.begin(), samples.end()));
  }
  return Status::OK();
}

double measureSelection(double density) {
  const size_t count = 1 << 18;  // 1 MiB of float32
  std::vector<float> values(count);
  std::mt19937 gen(7);
  std::normal_distribution<float> dist;
  for (float& v : values) v = dist(gen);
  const size_t k = kernels::topkK(count, density);
  std::vector<uint32_t> idx(k);
  std::vector<float> val(k);
  kernels::TopkScratch scratch;
  std::vector<double> samples;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    kernels::selectTopk(values.data(), count, k, static_cast<uint64_t>(i), idx.data(), val.data(), scratch);
    if (i > 0) samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(samples) / (count * sizeof(float));
}

}  // namespace

LinkFit fitAlphaBeta(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  LinkFit f;
  const size_t n = std::min(bytes.size(), seconds.size());
  if (n == 0) return f;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += bytes[i];
    my += seconds[i];
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (bytes[i] - mx) * (bytes[i] - mx);
    sxy += (bytes[i] - mx) * (seconds[i] - my);
  }
  f.present = true;
  f.beta = sxx > 0 ? sxy / sxx : 0.0;
  if (f.beta <= 0.0) {
    // Noise hid the slope (on a busy machine the small probes also wait for the peer to be
    // scheduled, seen with 3 ranks on 2 cores): price every byte at the largest probe's rate, an
    // upper bound, rather than call bytes free.
    const size_t big = static_cast<size_t>(std::max_element(bytes.begin(), bytes.begin() + n) - bytes.begin());
    f.beta = bytes[big] > 0 ? seconds[big] / bytes[big] : 0.0;
  }
  f.alpha = std::max(0.0, my - f.beta * mx);
  // A negative intercept (noise) would claim free messages; the smallest probe bounds alpha.
  if (f.alpha == 0.0) f.alpha = *std::min_element(seconds.begin(), seconds.begin() + n) * 0.5;
  return f;
}

void CostModel::dense(double* a, double* b) const {
  const double p = ranks, g = per_host, n = hosts;
  *a = *b = 0.0;
  if (ranks <= 1) return;
  if (hosts <= 1) {  // the shared-memory collective, modelled as a ring over shm links
    *a = 2 * (p - 1) * shm.alpha;
    *b = 2 * (p - 1) / p * shm.beta;
  } else if (hierarchical && per_host > 1) {
    *a = 2 * (g - 1) * shm.alpha + 2 * (n - 1) * net.alpha;
    *b = 2 * (g - 1) / g * shm.beta + 2 * (n - 1) / n * net.beta;
  } else {  // a flat ring that spans hosts waits on the network at every step
    *a = 2 * (p - 1) * net.alpha;
    *b = 2 * (p - 1) / p * net.beta;
  }
}

namespace {
// Rounds of recursive doubling among p: log2 of the largest power of two q <= p, plus the
// fold-in and fold-out rounds when q < p.
int rdRounds(int p) {
  int q = 1, rounds = 0;
  while (q * 2 <= p) {
    q *= 2;
    ++rounds;
  }
  return q < p ? rounds + 2 : rounds;
}
}  // namespace

double CostModel::recursiveDoublingSeconds(double m) const {
  return rdRounds(ranks) * (net.alpha + m * net.beta);
}

double CostModel::allreduceSeconds(double m) const {
  if (ranks > 1 && hosts > 1 && !hierarchical && m <= static_cast<double>(rd_max_bytes)) {
    return recursiveDoublingSeconds(m);
  }
  double a = 0, b = 0;
  dense(&a, &b);
  return a + b * m;
}

int64_t CostModel::rdCrossoverBytes() const {
  if (ranks <= 1 || hosts <= 1 || !net.present) return 0;
  // ring: 2(p-1) alpha + 2(p-1)/p beta m; recursive doubling: k (alpha + beta m), k its rounds.
  const double p = ranks, k = rdRounds(ranks);
  const double ring_a = 2 * (p - 1) * net.alpha, ring_b = 2 * (p - 1) / p * net.beta;
  const double rd_a = k * net.alpha, rd_b = k * net.beta;
  if (rd_a >= ring_a) return 0;
  if (rd_b <= ring_b) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>((ring_a - rd_a) / (rd_b - ring_b));
}

void CostModel::topk(double density, double* a, double* b) const {
  const double g = per_host;
  const double wire = 2 * density;  // k = d*M/4 pairs of 8 bytes per member and round
  *a = *b = 0.0;
  if (ranks <= 1) return;
  // sparse_allreduce.h: log2 of the largest power of two <= members rounds, two more to fold
  // and unfold the rest.
  auto steps = [](int members) {
    int m = 1, s = 0;
    for (; m * 2 <= members; m *= 2) ++s;
    return static_cast<double>(m < members ? s + 2 : s);
  };
  if (hosts > 1 && hierarchical && per_host > 1) {  // dense in the host, sparse across hosts
    *a = 2 * (g - 1) * shm.alpha + steps(hosts) * net.alpha;
    *b = 2 * (g - 1) / g * shm.beta + steps(hosts) * wire / g * net.beta + select_per_byte / g;
  } else {
    const LinkFit& l = hosts > 1 ? net : shm;
    *a = steps(ranks) * l.alpha;
    *b = steps(ranks) * wire * l.beta + select_per_byte;
  }
}

int64_t CostModel::bucketBytes(int64_t cap) const {
  double a = 0, b = 0;
  dense(&a, &b);
  const double want = b > 0 ? 19 * a / b : static_cast<double>(cap);
  return std::clamp<int64_t>(static_cast<int64_t>(std::min(want, 1e15)), std::min<int64_t>(64 << 10, cap), cap);
}

int64_t CostModel::firstBucketBytes(int64_t bucket) const {
  double a = 0, b = 0;
  dense(&a, &b);
  const double want = b > 0 ? 4 * a / b : static_cast<double>(bucket);
  return std::clamp<int64_t>(static_cast<int64_t>(std::min(want, 1e15)), std::min<int64_t>(16 << 10, bucket), bucket);
}

int64_t CostModel::topkThresholdBytes(double density) const {
  double da = 0, db = 0, ta = 0, tb = 0;
  dense(&da, &db);
  topk(density, &ta, &tb);
  if (ranks <= 1 || db <= tb) return std::numeric_limits<int64_t>::max();
  return std::max<int64_t>(4, static_cast<int64_t>(std::ceil(ta / (db - tb))));
}

bool sparseMovesFewerBytes(int p, size_t count, size_t esize, size_t pairs) {
  if (p <= 1) return true;
  const double dense = 2.0 * (p - 1) / p * static_cast<double>(count) * static_cast<double>(esize);
  return static_cast<double>(sparseAllreduceBytes(p, pairs, esize)) < dense;
}

std::string CostModel::describe() const {
  std::ostringstream os;
  os.precision(3);
  os << ranks << " ranks on " << hosts << " host(s)";
  if (shm.present) os << "; shm alpha " << shm.alpha * 1e6 << " us, beta " << shm.beta * 1e9 << " ns/B";
  if (net.present) os << "; net alpha " << net.alpha * 1e6 << " us, beta " << net.beta * 1e9 << " ns/B";
  if (select_per_byte > 0) os << "; top-k selection " << select_per_byte * 1e9 << " ns/B";
  if (hosts > 1 && net.present) {
    os << "; recursive doubling predicted faster than the ring up to " << rdCrossoverBytes()
       << " bytes (LIGHTCC_RD_ALLREDUCE_BYTES=" << rd_max_bytes << ")";
  }
  os << "; probe " << probe_ms << " ms";
  return os.str();
}

Status probeCostModel(const SetComm& world, const std::vector<std::string>& hosts, bool hierarchical,
                      bool measure_selection, double density, CostModel* out) {
  CostModel m;
  const int size = world.size(), me = world.me;
  m.ranks = size;
  m.hosts = static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
  m.per_host = static_cast<int>(std::count(hosts.begin(), hosts.end(), hosts[0]));
  m.hierarchical = hierarchical;
  if (size <= 1) {
    *out = m;
    return Status::OK();
  }
  const auto t0 = Clock::now();
  // Every rank derives the same probe pairs: rank 0 with its first same-host and first other-host peer.
  int shm_peer = -1, net_peer = -1;
  for (int r = 1; r < size; ++r) {
    if (hosts[r] == hosts[0] && shm_peer < 0) shm_peer = r;
    if (hosts[r] != hosts[0] && net_peer < 0) net_peer = r;
  }
  std::vector<double> fit(6, 0.0);  // shm alpha, beta, net alpha, beta, selection, probe ms
  std::vector<double> xs(kProbeBytes.begin(), kProbeBytes.end()), ys;
  for (int peer : {shm_peer, net_peer}) {
    if (peer < 0 || (me != 0 && me != peer)) continue;
    LIGHTCC_RETURN_IF_ERROR(pingPong(world, me == 0 ? peer : 0, me == 0, &ys));
    const LinkFit f = fitAlphaBeta(xs, ys);
    const size_t at = peer == shm_peer ? 0 : 2;
    fit[at] = f.alpha;
    fit[at + 1] = f.beta;
  }
  if (me == 0) {
    if (measure_selection) fit[4] = measureSelection(density);
    fit[5] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  // Rank 0's fit travels along the world ring, whose neighbours init connects anyway: sending it
  // from rank 0 to every rank would dial every peer at init (links are made on demand).
  const size_t fit_bytes = fit.size() * sizeof(double);
  if (me > 0) {
    std::vector<P2POp> recv = {{world.link(me - 1), false, fit.data(), fit_bytes}};
    LIGHTCC_RETURN_IF_ERROR(runP2P(world, recv, "receiving the cost model from rank " + std::to_string(me - 1)));
  }
  if (me + 1 < size) {
    std::vector<P2POp> send = {{world.link(me + 1), true, fit.data(), fit_bytes}};
    LIGHTCC_RETURN_IF_ERROR(runP2P(world, send, "passing the cost model to rank " + std::to_string(me + 1)));
  }
  m.shm = {shm_peer >= 0, fit[0], fit[1]};
  m.net = {net_peer >= 0, fit[2], fit[3]};
  m.select_per_byte = fit[4];
  m.probe_ms = fit[5];
  *out = m;
  return Status::OK();
}

}  // namespace lightcc
