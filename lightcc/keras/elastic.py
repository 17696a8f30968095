"""lightcc.keras.elastic: Horovod's horovod.keras.elastic (the same objects as lightcc.tensorflow.keras.elastic)."""
from lightcc.tensorflow.keras.elastic import (  # noqa: F401
    CommitStateCallback,
    KerasState,
    TensorFlowKerasState,
    UpdateBatchStateCallback,
    UpdateEpochStateCallback,
    __all__,
    run,
)
