"""lightcc.keras.callbacks: the Keras callbacks of lightcc.tensorflow.keras.callbacks."""
from lightcc.tensorflow.keras.callbacks import (  # noqa: F401
                                                BestModelCheckpoint,
                                                BroadcastGlobalVariablesCallback,
                                                LearningRateScheduleCallback,
                                                LearningRateWarmupCallback,
                                                MetricAverageCallback,
)

__all__ = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback", "LearningRateScheduleCallback",
           "LearningRateWarmupCallback", "BestModelCheckpoint"]
