"""lightcc.keras: Horovod's horovod.keras API, for Keras 3 and tf-keras (same as lightcc.tensorflow.keras).

Keras 3 runs on TensorFlow here; the flavour used for callbacks and load_model follows
TF_USE_LEGACY_KERAS exactly as `tf.keras` does.
"""
from lightcc.keras import callbacks  # noqa: F401
from lightcc.keras import elastic  # noqa: F401
from lightcc.tensorflow.keras import *  # noqa: F401,F403
from lightcc.tensorflow.keras import __all__  # noqa: F401
