"""torchvision.models' constructors that Horovod's examples call, built by lightcc.models (torch.nn only)."""
from lightcc.models.resnet import resnet50, resnet101  # noqa: F401
from lightcc.models.vgg import vgg16  # noqa: F401
