// FlowGovernor: the hill climb over a send lane's active flow count (see the header).
#include "flow_governor.h"

#include <algorithm>

namespace harp {

void FlowGovernor::configure(int max_flows, int start, bool adapt) {
  max_ = std::max(1, max_flows);
  adapt_ = adapt && max_ > 1;
  active_ = adapt_ ? std::clamp(start, 1, max_) : max_;
  phase_ = Phase::kMeasure;
}

bool FlowGovernor::tick(bool busy, double now_s) {
  if (!adapt_) return false;
  if (w_.last_s >= 0 && w_.was_busy) w_.busy_s += now_s - w_.last_s;
  w_.last_s = now_s;
  w_.was_busy = busy;
  return w_.busy_s >= kWindowSeconds;
}

bool FlowGovernor::closeWindow(uint64_t delivered) {
  const double busy_s = w_.busy_s;
  w_.busy_s = 0;
  const uint64_t start = w_.start;
  w_.start = delivered;
  if (!w_.have_start || delivered < start) {  // the baseline (or a counter that went back)
    w_.have_start = true;
    return false;
  }
  last_rate_ = static_cast<double>(delivered - start) / busy_s;
  return decide(last_rate_);
}

bool FlowGovernor::setActive(int n) {
  n = std::clamp(n, 1, max_);
  if (n == active_) return false;
  active_ = n;
  ++changes_;
  return true;
}

bool FlowGovernor::decide(double rate) {
  switch (phase_) {
    case Phase::kHold:
      if (--hold_left_ > 0) return false;
      [[fallthrough]];
    case Phase::kMeasure: {
      // This window's rate is the reference a probe from this count is judged against.
      base_rate_ = rate;
      const bool up = next_up_ ? active_ < max_ : active_ == 1;
      phase_ = up ? Phase::kProbeUp : Phase::kProbeDown;
      return setActive(active_ + (up ? 1 : -1));
    }
    case Phase::kProbeUp:
      if (rate >= base_rate_ * (1 + kGainToGrow)) {
        base_rate_ = rate;
        if (active_ < max_) return setActive(active_ + 1);
        hold(false);
        return false;
      }
      hold(false);
      return setActive(active_ - 1);
    case Phase::kProbeDown:
      // The reference stays the rate before the first step down, so small losses cannot add up.
      if (rate >= base_rate_ * (1 - kLossToShrink)) {
        if (active_ > 1) return setActive(active_ - 1);
        hold(true);
        return false;
      }
      hold(true);
      return setActive(active_ + 1);
  }
  return false;
}

void FlowGovernor::hold(bool next_up) {
  phase_ = Phase::kHold;
  hold_left_ = kHoldWindows;
  next_up_ = next_up;
}

}  // namespace harp
