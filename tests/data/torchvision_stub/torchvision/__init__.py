"""Test-only stand-in for torchvision (which cannot load beside this torch): `models` builds lightcc.models'."""
from torchvision import models  # noqa: F401
