// Test helpers: forked peers with hard timeouts, a handle pipe, data patterns, check macros.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#define HT_CHECK(cond, ...)                                                        \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "[pid %d] CHECK FAILED %s:%d: %s: ", static_cast<int>(getpid()), \
              __FILE__, __LINE__, #cond);                                          \
      fprintf(stderr, __VA_ARGS__);                                                \
      fprintf(stderr, "\n");                                                       \
      _exit(1);                                                                    \
    }                                                                              \
  } while (0)

namespace harp_test {

inline double nowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Runs fn in a child process that is killed if it outlives timeout_s. Returns its pid.
inline pid_t spawn(const std::function<int()>& fn, double timeout_s) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(static_cast<unsigned>(timeout_s + 1));  // hard stop even if the parent dies
    int rc = fn();
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
  }
  return pid;
}

// Waits for pid up to timeout_s; kills it on timeout. Returns its exit code (128+sig if killed).
inline int waitFor(pid_t pid, double timeout_s) {
  double end = nowS() + timeout_s;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return 255;
    }
    if (nowS() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fprintf(stderr, "child %d timed out after %.0f s and was killed\n", static_cast<int>(pid),
              timeout_s);
      return 124;
    }
    usleep(2000);
  }
}

inline bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

inline bool readAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Deterministic bytes for message `msg` of a run with `seed`: cheap to generate and check.
inline void fillPattern(uint8_t* p, size_t n, uint64_t seed, uint64_t msg) {
  uint64_t x = (seed * 0x9E3779B97F4A7C15ULL) ^ (msg + 1) * 0xD1B54A32D192ED03ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    memcpy(p + i, &x, 8);
  }
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(x >> (8 * (i & 7)));
}

// Returns the first mismatching offset, or -1.
inline long long checkPattern(const uint8_t* p, size_t n, uint64_t seed, uint64_t msg) {
  constexpr size_t kBlock = 1 << 16;
  static thread_local uint8_t* want = nullptr;
  static thread_local size_t want_n = 0;
  if (want_n < n) {
    free(want);
    want = static_cast<uint8_t*>(malloc(n > 0 ? n : 1));
    want_n = n;
  }
  fillPattern(want, n, seed, msg);
  for (size_t off = 0; off < n; off += kBlock) {
    size_t len = n - off < kBlock ? n - off : kBlock;
    if (memcmp(p + off, want + off, len) != 0) {
      for (size_t i = off; i < off + len; ++i) if (p[i] != want[i]) return static_cast<long long>(i);
    }
  }
  return -1;
}

}  // namespace harp_test
