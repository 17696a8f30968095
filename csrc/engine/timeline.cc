// Timeline: event formatting and file handling.
#include "engine/timeline.h"

#include <chrono>
#include <sstream>

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
  std::lock_guard<std::mutex> lock(mu_);
  if (active_) {
    out_ << "\n]\n";
    out_.close();
  }
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_) return Status::InvalidArgument("cannot open timeline file '" + path + "' for writing");
  mark_cycles_ = mark_cycles;
  first_event_ = true;
  rows_.clear();
  start_us_ = nowMicros();
  out_ << "[";
  std::ostringstream meta;
  meta << R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "lightcc", )"
       << R"("start_time_since_epoch_in_micros": )" << start_us_ << "}}";
  write(meta.str());
  active_.store(true, std::memory_order_release);
  return Status::OK();
}

void Timeline::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_) return;
  active_.store(false, std::memory_order_release);
  out_ << "\n]\n";
  out_.close();
}

void Timeline::write(const std::string& event) {
  if (!first_event_) out_ << ",";
  first_event_ = false;
  out_ << "\n" << event;
}

int Timeline::rowOf(const std::string& tensor) {
  auto it = rows_.find(tensor);
  if (it != rows_.end()) return it->second;
  int row = static_cast<int>(rows_.size()) + 1;
  rows_[tensor] = row;
  std::ostringstream meta;
  meta << R"({"name": "process_name", "ph": "M", "pid": )" << row << R"(, "args": {"name": ")"
       << jsonEscape(tensor) << R"("}})";
  write(meta.str());
  std::ostringstream sort;
  sort << R"({"name": "process_sort_index", "ph": "M", "pid": )" << row
       << R"(, "args": {"sort_index": )" << row << "}}";
  write(sort.str());
  return row;
}

void Timeline::begin(const std::string& tensor, const std::string& phase) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_) return;
  int row = rowOf(tensor);
  std::ostringstream e;
  e << R"({"name": ")" << jsonEscape(phase) << R"(", "ph": "B", "ts": )" << nowMicros() - start_us_
    << R"(, "pid": )" << row << R"(, "tid": 0})";
  write(e.str());
}

void Timeline::end(const std::string& tensor) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_) return;
  int row = rowOf(tensor);
  std::ostringstream e;
  e << R"({"ph": "E", "ts": )" << nowMicros() - start_us_ << R"(, "pid": )" << row
    << R"(, "tid": 0})";
  write(e.str());
}

void Timeline::instant(const std::string& tensor, const std::string& label) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_) return;
  int row = rowOf(tensor);
  std::ostringstream e;
  e << R"({"name": ")" << jsonEscape(label) << R"(", "ph": "i", "s": "p", "ts": )"
    << nowMicros() - start_us_ << R"(, "pid": )" << row << R"(, "tid": 0})";
  write(e.str());
}

void Timeline::cycleStart() {
  if (!active() || !mark_cycles_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_) return;
  std::ostringstream e;
  e << R"({"name": "CYCLE_START", "ph": "i", "s": "g", "ts": )" << nowMicros() - start_us_
    << R"(, "pid": 0, "tid": 0})";
  write(e.str());
}

}  // namespace lightcc
