"""BaseDataLoader and AsyncDataLoaderMixin: Horovod's data-loader interface, framework-free.

A loader implements `__len__` and `_iterate()` (one epoch of batches); iterating it yields
each batch through `_process_batch`. AsyncDataLoaderMixin, placed before the loader class,
reads batches on a daemon thread into a bounded queue so the next batch is ready while the
current one trains. The thread owns `_iterate()`; the consumer owns `__iter__`; they meet only
at the queue. The thread runs epoch after epoch (an end-of-epoch marker after each) until
`close_async_loader()`; an exception in `_iterate()` is handed to the consumer and re-raised.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Iterator

_END_OF_EPOCH = None  # Horovod's marker: None ends one pass of __iter__


class _Failure:
    """An exception raised by `_iterate()` on the loader thread, carried to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class BaseDataLoader:
    """A loader of batches: subclasses implement `__len__` and `_iterate`."""

    def __len__(self) -> int:
        """The number of batches per epoch."""
        raise NotImplementedError()

    def _iterate(self) -> Iterator[Any]:
        """Yield one epoch of batches."""
        raise NotImplementedError()

    def __iter__(self) -> Iterator[Any]:
        for batch in self._iterate():
            yield self._process_batch(batch)

    def _process_batch(self, batch: Any) -> Any:
        """Hook a trainer uses to reshape each batch; the identity here."""
        return batch


class AsyncDataLoaderMixin:
    """Prefetch batches on a background thread: `class Loader(AsyncDataLoaderMixin, MyLoader)`.

    `async_loader_queue_size` bounds the prefetched batches; 0 turns prefetching off (batches
    are read on the caller's thread). Call `close_async_loader()` to stop the thread.
    """

    def __init__(self, async_loader_queue_size: int = 64, debug_data_loader: bool = False, *args: Any,
                 **kwargs: Any) -> None:
        self.async_loader_queue_size = async_loader_queue_size
        self.debug_data_loader = debug_data_loader
        super().__init__(*args, **kwargs)
        if self.async_loader_queue_size > 0:
            self.finished_event = threading.Event()
            self.queue: "queue.Queue[Any]" = queue.Queue(self.async_loader_queue_size)
            self.thread = threading.Thread(target=self._async_worker, daemon=True, name="lightcc-data-loader")
            self.started = False

    def _put(self, item: Any) -> bool:
        """Queue `item` unless the loader is closing (never blocks past a close)."""
        while not self.finished_event.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _async_worker(self) -> None:
        try:
            while not self.finished_event.is_set():
                for batch in self._iterate():
                    if not self._put(batch):
                        return
                if not self._put(_END_OF_EPOCH):
                    return
        except Exception as e:  # handed to the consumer, which re-raises it
            self._put(_Failure(e))
            self._put(_END_OF_EPOCH)

    def close_async_loader(self) -> None:
        """Stop the background thread and drop the batches it had queued."""
        if self.async_loader_queue_size <= 0 or not self.started:
            return
        self.finished_event.set()
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        self.thread.join()

    def __iter__(self) -> Iterator[Any]:
        if self.async_loader_queue_size <= 0:
            yield from super().__iter__()  # type: ignore[misc]
            return
        if not self.started:
            self.started = True
            self.thread.start()
        while True:
            batch = self.queue.get()
            if batch is _END_OF_EPOCH:
                return
            if isinstance(batch, _Failure):
                raise batch.error
            yield self._process_batch(batch)  # type: ignore[attr-defined]
