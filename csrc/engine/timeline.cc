// Timeline: the recording queue, the writer thread, event formatting and file handling.
#include "engine/timeline.h"

#include <sstream>
#include <utility>

namespace lightcc {
namespace {
std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

int64_t Timeline::nowMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status Timeline::start(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> control(control_mu_);
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  if (!out) return Status::InvalidArgument("cannot open timeline file '" + path + "' for writing");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (active_) {  // restarting: close the old file first, as Horovod's start_timeline does
      stopping_ = true;
      active_.store(false, std::memory_order_release);
    }
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
  out_ = std::move(out);
  first_event_ = true;
  rows_.clear();
  int64_t start_us = nowMicros();
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.clear();
    stopping_ = false;
    start_us_ = start_us;
  }
  mark_cycles_.store(mark_cycles, std::memory_order_relaxed);
  out_ << "[";
  std::ostringstream meta;
  meta << R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "lightcc", )"
       << R"("start_time_since_epoch_in_micros": )" << start_us << "}}";
  writeRaw(meta.str());
  out_.flush();
  writer_ = std::thread([this] { writerLoop(); });
  active_.store(true, std::memory_order_release);
  return Status::OK();
}

void Timeline::stop() {
  std::lock_guard<std::mutex> control(control_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    active_.store(false, std::memory_order_release);
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
}

void Timeline::record(Kind kind, const std::string& tensor, const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_) return;  // stopped between the caller's active() check and here
  pending_.push_back(Event{kind, nowMicros() - start_us_, tensor, label});
}

void Timeline::writerLoop() {
  std::vector<Event> batch;
  bool last = false;
  while (!last) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // A timed wait, not a wakeup per event: recording never pays for a notify.
      wake_.wait_for(lock, kFlushInterval, [this] { return stopping_; });
      last = stopping_;
      batch.swap(pending_);
    }
    if (batch.empty() && !last) continue;
    for (const Event& e : batch) writeEvent(e);
    batch.clear();
    if (last) out_ << "\n]\n";
    out_.flush();
  }
  out_.close();
}

void Timeline::writeRaw(const std::string& json) {
  if (!first_event_) out_ << ",";
  first_event_ = false;
  out_ << "\n" << json;
}

int Timeline::rowOf(const std::string& tensor) {
  auto it = rows_.find(tensor);
  if (it != rows_.end()) return it->second;
  int row = static_cast<int>(rows_.size()) + 1;
  rows_[tensor] = row;
  std::ostringstream meta;
  meta << R"({"name": "process_name", "ph": "M", "pid": )" << row << R"(, "args": {"name": ")"
       << jsonEscape(tensor) << R"("}})";
  writeRaw(meta.str());
  std::ostringstream sort;
  sort << R"({"name": "process_sort_index", "ph": "M", "pid": )" << row
       << R"(, "args": {"sort_index": )" << row << "}}";
  writeRaw(sort.str());
  return row;
}

void Timeline::writeEvent(const Event& e) {
  std::ostringstream out;
  switch (e.kind) {
    case Kind::kBegin:
      out << R"({"name": ")" << jsonEscape(e.label) << R"(", "ph": "B", "ts": )" << e.ts
          << R"(, "pid": )" << rowOf(e.tensor) << R"(, "tid": 0})";
      break;
    case Kind::kEnd:
      out << R"({"ph": "E", "ts": )" << e.ts << R"(, "pid": )" << rowOf(e.tensor) << R"(, "tid": 0})";
      break;
    case Kind::kInstant:
      out << R"({"name": ")" << jsonEscape(e.label) << R"(", "ph": "i", "s": "p", "ts": )" << e.ts
          << R"(, "pid": )" << rowOf(e.tensor) << R"(, "tid": 0})";
      break;
    case Kind::kCycleStart:
      out << R"({"name": "CYCLE_START", "ph": "i", "s": "g", "ts": )" << e.ts << R"(, "pid": 0, "tid": 0})";
      break;
  }
  writeRaw(out.str());
}

void Timeline::begin(const std::string& tensor, const std::string& phase) {
  if (active()) record(Kind::kBegin, tensor, phase);
}

void Timeline::end(const std::string& tensor) {
  if (active()) record(Kind::kEnd, tensor, std::string());
}

void Timeline::instant(const std::string& tensor, const std::string& label) {
  if (active()) record(Kind::kInstant, tensor, label);
}

void Timeline::cycleStart() {
  if (active() && mark_cycles_.load(std::memory_order_relaxed)) {
    record(Kind::kCycleStart, std::string(), std::string());
  }
}

}  // namespace lightcc
