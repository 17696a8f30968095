// Tests Timeline: events reach the file while the timeline runs (not only at stop), events
// recorded from several threads at once all arrive, stop closes the JSON array, and a restart
// closes the old file before opening the new one.
// tests/single/test_cpp_units.py builds it against lightcc_core and runs it.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "engine/timeline.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
  return n;
}

// Polls until the file holds `part` or a generous deadline passes (a loaded machine may be slow;
// the old timeline wrote nothing before stop, so it never got there at all).
bool appears(const std::string& path, const std::string& part) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (readAll(path).find(part) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

std::string tempPath(const std::string& name) {
  return "/tmp/lightcc-timeline-test-" + std::to_string(getpid()) + "-" + name + ".json";
}

void testWrittenAsItGoes() {
  const std::string path = tempPath("live");
  Timeline t;
  check(t.start(path, true).ok(), "start");
  t.cycleStart();
  t.begin("allreduce.x", "NEGOTIATE_ALLREDUCE");
  t.end("allreduce.x");
  t.begin("allreduce.x", "ALLREDUCE");
  t.instant("allreduce.x", "1");
  t.end("allreduce.x");
  check(appears(path, "\"ALLREDUCE\""), "events in the file while the timeline runs");
  std::string live = readAll(path);
  check(live.find("allreduce.x") != std::string::npos && live.find("NEGOTIATE_ALLREDUCE") != std::string::npos &&
            live.find("CYCLE_START") != std::string::npos,
        "row, phases and cycle marker written: " + live);
  check(live.find(']') == std::string::npos, "array still open while running");
  t.stop();
  std::string done = readAll(path);
  check(done.rfind("\n]\n") == done.size() - 3, "stop closes the array: " + done);
  t.begin("allreduce.y", "LATE");
  check(readAll(path) == done, "nothing recorded after stop");
  std::remove(path.c_str());
}

void testConcurrentRecordersLoseNothing() {
  const std::string path = tempPath("threads");
  Timeline t;
  check(t.start(path, false).ok(), "start");
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&t, i] {
      for (int k = 0; k < kEach; ++k) {
        t.begin("t" + std::to_string(i), "WORK");
        t.end("t" + std::to_string(i));
      }
    });
  }
  for (auto& th : threads) th.join();
  t.cycleStart();  // off: mark_cycles was false
  t.stop();
  std::string s = readAll(path);
  check(count(s, "\"ph\": \"B\"") == kThreads * kEach, "every begin written");
  check(count(s, "\"ph\": \"E\"") == kThreads * kEach, "every end written");
  check(count(s, "\"process_sort_index\"") == kThreads, "one row per tensor");
  check(s.find("CYCLE_START") == std::string::npos, "no cycle markers unless asked");
  std::remove(path.c_str());
}

void testRestartClosesTheOldFile() {
  const std::string first = tempPath("first"), second = tempPath("second");
  Timeline t;
  check(t.start(first, false).ok(), "start first");
  t.begin("a", "ONE");
  check(t.start(second, false).ok(), "start second");
  t.begin("b", "TWO");
  std::string one = readAll(first);
  check(one.find("ONE") != std::string::npos && one.rfind("\n]\n") == one.size() - 3, "first closed: " + one);
  check(appears(second, "TWO"), "second written as it goes");
  t.stop();
  check(readAll(second).find("ONE") == std::string::npos, "no event crosses files");
  check(!t.start("/nonexistent-dir/x.json", false).ok(), "unwritable path is an error");
  std::remove(first.c_str());
  std::remove(second.c_str());
}

}  // namespace

int main() {
  testWrittenAsItGoes();
  testConcurrentRecordersLoseNothing();
  testRestartClosesTheOldFile();
  return lightcc::testing::summary();
}
