// FlowGovernor: how many of a send lane's flows may claim chunks, moved toward what the path rewards.
//
// DESIGN. Paths differ in what more TCP flows buy. A link with one aggregate cap (a NIC, a shaped
// host link) is filled by one or two flows, and further flows only add queueing and reordering;
// a cloud VPC that caps every flow (commonly 5-10 Gbit/s on 25-100 Gbit/s NICs, emulated here as
// 500 Mbit/s on 2 Gbit/s) is filled only by link / cap flows. No count suits both, so a lane opens
// HARP_NFLOWS flows and lets `active()` of them claim chunks, measured in windows of busy time
// (time with chunks queued or on the wire, so a lane the application leaves idle is not taken for
// a slow path) by the bytes the peer acknowledged (bytes merely handed to the kernel swing with
// the socket buffers by more than a flow's worth). Hill climbing on the measured rate:
//   probe up:   one more flow; kept when the rate rose by kGainToGrow, else undone;
//   probe down: one flow fewer; kept when the rate fell by less than kLossToShrink, else undone;
// an undone probe holds the count for kHoldWindows windows and then probes the other way, so the
// count keeps tracking a path that changes. The asymmetric thresholds make noise shrink the count
// only where a flow buys nothing measurable, and grow it only where it clearly pays.
// Pure logic (no clock, no sockets): tests feed it byte counts and times.
#pragma once

#include <cstdint>

namespace harp {

class FlowGovernor {
 public:
  static constexpr double kWindowSeconds = 0.5;  // busy time per measurement
  static constexpr double kGainToGrow = 0.08;
  static constexpr double kLossToShrink = 0.03;
  static constexpr int kHoldWindows = 10;
  static constexpr int kStartFlows = 4;  // per comm, shared out over its lanes

  // `max_flows` opened, `start` of them active at first; adapting off: all of them always.
  void configure(int max_flows, int start, bool adapt);
  int active() const { return active_; }
  int changes() const { return changes_; }  // how often the count moved (logs, tests)
  double lastRate() const { return last_rate_; }  // bytes/s of the last window (logs)

  // Called by the owning instance after each pass over the lane: `busy` whether it has chunks
  // queued or in flight now (the time until the next call counts as busy when it had), `now_s` a
  // monotonic time. True when a window is complete: the caller then calls closeWindow().
  bool tick(bool busy, double now_s);
  // Ends the window with the lane's running total of acknowledged bytes; true when active()
  // changed. The first window only sets the baseline (a new comm's buffers fill in it).
  bool closeWindow(uint64_t delivered);

 private:
  enum class Phase : uint8_t { kMeasure, kProbeUp, kProbeDown, kHold };
  bool decide(double rate);
  bool setActive(int n);
  void hold(bool next_up);  // keep the count for kHoldWindows, then probe that way

  int max_ = 1;
  int active_ = 1;
  bool adapt_ = false;
  Phase phase_ = Phase::kMeasure;
  bool next_up_ = true;     // the direction of the next probe
  double base_rate_ = 0;    // the rate at the count a probe started from
  double last_rate_ = 0;
  int hold_left_ = 0;
  int changes_ = 0;
  // The current window.
  struct Window {
    double last_s = -1;
    bool was_busy = false;
    double busy_s = 0;
    bool have_start = false;
    uint64_t start = 0;  // delivered bytes when the window began
  };
  Window w_;
};

}  // namespace harp
