"""DLPack capsules read without a framework: the address, device and shape of a tensor another framework exported.

A capsule (``to_dlpack``'s "dltensor") points to a DLManagedTensor, whose first member is the
DLTensor: data pointer, device (type, id), ndim, dtype (code, bits, lanes), shape, strides
(null: compact row-major) and a byte offset. It is read here and never consumed: the capsule
keeps the exporter's memory alive until it is garbage-collected, when it calls the deleter, so
whoever hands the address to the core keeps the capsule as long as the core may touch it.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Tuple

CPU, CUDA = 1, 2  # DLDeviceType codes


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_NAME = b"dltensor"
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_pointer.restype = ctypes.c_void_p
_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@dataclass(frozen=True)
class View:
    """Where an exported tensor's memory is; `capsule` keeps it alive."""

    capsule: Any
    address: int
    device_type: int
    device_id: int
    shape: Tuple[int, ...]
    itemsize: int

    @property
    def device(self) -> int:
        """The core's device: the CUDA ordinal, or -1 for host memory."""
        return self.device_id if self.device_type == CUDA else -1


def view(capsule: Any) -> View:
    """Reads an unconsumed DLPack capsule; ValueError for a consumed one, lanes, or a strided layout."""
    if not _is_valid(capsule, _NAME):
        raise ValueError("not an unconsumed DLPack capsule (named 'dltensor')")
    t = _Tensor.from_address(_pointer(capsule, _NAME))
    if t.device.device_type not in (CPU, CUDA):
        raise ValueError(f"lightcc takes host and CUDA memory, not DLPack device type {t.device.device_type}")
    if t.dtype.lanes != 1:
        raise ValueError(f"vector dtypes (lanes={t.dtype.lanes}) are not supported")
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    if t.strides:
        expect = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and int(t.strides[i]) != expect:
                raise ValueError(f"the exported tensor is not contiguous (shape {shape})")
            expect *= shape[i]
    return View(capsule, int(t.data or 0) + int(t.byte_offset), int(t.device.device_type), int(t.device.device_id),
                shape, int(t.dtype.bits) // 8)
