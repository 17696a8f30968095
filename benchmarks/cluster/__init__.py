"""Emulated multi-host cluster: replay model gradients through lightcc under LightCC algorithm flags."""
