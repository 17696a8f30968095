"""lightcc.data: Horovod's horovod.data (a data-loader base class and a background-prefetch mixin)."""
from lightcc.data.data_loader_base import AsyncDataLoaderMixin, BaseDataLoader

__all__ = ["AsyncDataLoaderMixin", "BaseDataLoader"]
