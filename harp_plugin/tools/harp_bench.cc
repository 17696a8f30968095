// harp-bench: point-to-point throughput/latency of HARP vs one socket vs multi-stream raw TCP.
//
// Usage: harp-bench --lib libnccl-net-harp.so [--modes harp,socket1,tcp] [--streams 4]
//          [--sizes 64K,1M,4M,16M] [--mb-per-size 512] [--latency]
//          [--ns-recv NS --ns-send NS --ifname IF] [--idle yield|USEC]
// HARP settings come from the environment as usual (HARP_NFLOWS, HARP_NINSTANCES, ...). Both
// ends are this tool's own children, so without HARP_JOB_SECRET it makes a fresh one for the run.
// Prints one line per (mode, size): "bench mode=harp size=4194304 GB/s=3.21".
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "bench.h"
#include "plugin_loader.h"

namespace harp_bench {
namespace {

bool readAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool enterNs(const std::string& ns) {
  if (ns.empty()) return true;
  std::string path = "/var/run/netns/" + ns;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    fprintf(stderr, "harp-bench: cannot enter network namespace %s: %s\n", ns.c_str(), strerror(errno));
    return false;
  }
  close(fd);
  return true;
}

size_t parseSize(const std::string& s) {
  char* end = nullptr;
  double v = strtod(s.c_str(), &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return static_cast<size_t>(v);
}

}  // namespace

size_t messagesFor(const Config& cfg, size_t size) {
  if (cfg.latency) return 2000;
  size_t n = cfg.bytes_per_size / (size > 0 ? size : 1);
  return n < 16 ? 16 : (n > 200000 ? 200000 : n);
}

bool harpBenchRun(const Config& cfg, std::vector<Result>* out, std::string* err) {
  int ctl[2], res[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, ctl) != 0 || pipe(res) != 0) {
    *err = "socketpair/pipe failed";
    return false;
  }
  pid_t pids[2];
  for (int role = 0; role < 2; ++role) {  // 0 = receiver, 1 = sender
    pids[role] = fork();
    if (pids[role] == 0) {
      alarm(600);
      close(res[0]);
      dup2(res[1], 100);  // results pipe at a fixed fd for the side that measures
      bool receiver = role == 0;
      if (!enterNs(receiver ? cfg.ns_recv : cfg.ns_send)) _exit(3);
      int fd = ctl[receiver ? 0 : 1];
      int rc = cfg.mode == "harp" ? harpSide(cfg, fd, receiver) : tcpSide(cfg, fd, receiver);
      _exit(rc);
    }
  }
  close(res[1]);
  close(ctl[0]);
  close(ctl[1]);
  for (size_t i = 0; i < cfg.sizes.size(); ++i) {
    double v = 0;
    if (!readAll(res[0], &v, sizeof(v))) break;
    out->push_back({cfg.sizes[i], v});
  }
  close(res[0]);
  int bad = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  if (bad != 0 || out->size() != cfg.sizes.size()) {
    *err = "a benchmark process failed (see its messages above)";
    return false;
  }
  return true;
}

void printUsage(FILE* out) {
  fprintf(out,
          "usage: harp-bench [--lib libnccl-net-harp.so] [--modes harp,socket1,tcp] [--streams N]\n"
          "                  [--sizes 64K,1M,4M,16M] [--mb-per-size MB] [--window N] [--latency]\n"
          "                  [--ns-recv NS --ns-send NS --ifname IF] [--idle yield|USEC]\n\n"
          "Point-to-point throughput (GB/s) or --latency (usec) of HARP against one socket\n"
          "(socket1) and multi-stream raw TCP (tcp), between a receiver and a sender process.\n\n"
          "  --lib PATH        the HARP plugin (required for mode harp; the harp-bench console\n"
          "                    script passes lightcc's own)\n"
          "  --modes LIST      modes to run, in order (default harp,socket1,tcp)\n"
          "  --streams N       connections of mode tcp (default 4)\n"
          "  --sizes LIST      message sizes, K/M/G suffixes (default 64K,1M,4M,16M)\n"
          "  --mb-per-size MB  bytes moved per size (default 512)\n"
          "  --window N        messages in flight\n"
          "  --latency         measure one-message round trips instead of throughput\n"
          "  --ns-recv/--ns-send NS  run each side in a named network namespace\n"
          "  --ifname IF       the interface HARP uses (sets HARP_IFNAME for both sides)\n"
          "  --idle yield|USEC what an idle progress loop does (default yield)\n\n"
          "HARP reads its settings from the environment (harp-setup --help lists them). Both\n"
          "ends are children of this process: without HARP_JOB_SECRET (and without\n"
          "HARP_ALLOW_NO_SECRET=1) harp-bench makes a fresh secret for the run.\n");
}

// Both ends are our children, so a secret made here authenticates them to each other.
bool ensureJobSecret() {
  const char* have = getenv("HARP_JOB_SECRET");
  const char* open_ok = getenv("HARP_ALLOW_NO_SECRET");
  if ((have != nullptr && *have != '\0') || (open_ok != nullptr && strcmp(open_ok, "1") == 0)) return true;
  unsigned char raw[32];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = fd >= 0 && readAll(fd, raw, sizeof(raw));
  if (fd >= 0) close(fd);
  if (!ok) {
    fprintf(stderr, "harp-bench: HARP_JOB_SECRET is unset and /dev/urandom is unreadable: set "
                    "HARP_JOB_SECRET (any string, the same for both ends)\n");
    return false;
  }
  char hex[sizeof(raw) * 2 + 1];
  for (size_t i = 0; i < sizeof(raw); ++i) snprintf(hex + 2 * i, 3, "%02x", raw[i]);
  setenv("HARP_JOB_SECRET", hex, 1);
  return true;
}

// --idle: "yield" (0) or microseconds 1..100000; false for anything else.
bool parseIdle(const std::string& v, int* out) {
  char* end = nullptr;
  long us = strtol(v.c_str(), &end, 10);
  if (v == "yield") {
    *out = 0;
    return true;
  }
  if (v.empty() || *end != '\0' || us <= 0 || us > 100000) return false;
  *out = static_cast<int>(us);
  return true;
}

// Fills cfg, modes and sizes from the command line; returns -1 to go on, else the exit code.
int parseArgs(int argc, char** argv, Config* cfg, std::string* modes, std::string* sizes) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--lib") cfg->lib = next();
    else if (a == "--modes") *modes = next();
    else if (a == "--streams") cfg->streams = atoi(next().c_str());
    else if (a == "--sizes") *sizes = next();
    else if (a == "--mb-per-size") cfg->bytes_per_size = static_cast<size_t>(atof(next().c_str()) * (1 << 20));
    else if (a == "--window") cfg->window = atoi(next().c_str());
    else if (a == "--idle") {
      std::string v = next();
      if (!parseIdle(v, &cfg->idle_sleep_us)) {
        fprintf(stderr, "harp-bench: --idle '%s': expected yield or microseconds 1..100000\n", v.c_str());
        return 2;
      }
    }
    else if (a == "--latency") cfg->latency = true;
    else if (a == "--ns-recv") cfg->ns_recv = next();
    else if (a == "--ns-send") cfg->ns_send = next();
    else if (a == "--ifname") cfg->ifname = next();
    else if (a == "--help" || a == "-h") {
      printUsage(stdout);
      return 0;
    } else {
      fprintf(stderr, "harp-bench: unknown argument '%s' (try --help)\n", a.c_str());
      return 2;
    }
  }
  return -1;
}

// Runs one mode and prints its lines; false if it failed (after saying why).
bool runMode(const Config& c) {
  std::vector<Result> results;
  std::string err;
  if (!harpBenchRun(c, &results, &err)) {
    fprintf(stderr, "harp-bench: mode %s: %s\n", c.mode.c_str(), err.c_str());
    return false;
  }
  const char* env_flows = getenv("HARP_NFLOWS");
  const char* env_inst = getenv("HARP_NINSTANCES");
  for (const Result& r : results) {
    printf("bench mode=%s streams=%d flows=%s instances=%s idle=%s size=%zu %s=%.3f\n", c.mode.c_str(),
           c.mode == "tcp" ? c.streams : 1, env_flows ? env_flows : "default", env_inst ? env_inst : "default",
           c.idle_sleep_us > 0 ? (std::to_string(c.idle_sleep_us) + "us").c_str() : "yield", r.size,
           c.latency ? "usec" : "GB/s", r.value);
  }
  fflush(stdout);
  return true;
}

}  // namespace harp_bench

using namespace harp_bench;

int main(int argc, char** argv) {
  Config cfg;
  std::string modes = "harp,socket1,tcp", sizes = "64K,1M,4M,16M";
  if (int rc = parseArgs(argc, argv, &cfg, &modes, &sizes); rc >= 0) return rc;
  if (modes.find("harp") != std::string::npos && !ensureJobSecret()) return 2;
  std::stringstream ss(sizes);
  for (std::string s; std::getline(ss, s, ',');) cfg.sizes.push_back(parseSize(s));
  std::stringstream ms(modes);
  int failures = 0;
  for (std::string m; std::getline(ms, m, ',');) {
    Config c = cfg;
    c.mode = m;
    if (m == "harp" && c.lib.empty()) {
      fprintf(stderr, "harp-bench: --lib is required for mode harp\n");
      return 2;
    }
    if (!runMode(c)) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
