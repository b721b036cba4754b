"""_args.py: Python values -> tilert_arg.

A tensor is anything that describes device memory in one of these ways (tried in order):
  - a torch.Tensor (duck-typed: data_ptr(), shape, stride(), dtype; torch is not imported),
    which also covers bf16 and the FP8 types that __cuda_array_interface__ cannot spell;
  - __cuda_array_interface__ (CuPy, Numba, torch, ...): data, shape, typestr, strides in bytes;
  - __dlpack__ (JAX, CuPy, torch, ...): the capsule's DLTensor, read without consuming it.
Scalars: bool, int, float (the runtime converts them to the parameter's type and range-checks).
Which tilert_arg kind a tensor becomes (tensor or pointer) follows the kernel's parameter; every
other check (count, kinds, dtypes, ranks, alignment) is the runtime's, with its messages.
"""
import ctypes

from . import _rt

# torch's dtype names (str(t.dtype) without "torch.") -> tilec dtype names
_TORCH = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int8": "i8", "int16": "i16",
          "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "bool": "i1", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2"}
# __cuda_array_interface__ typestr (without the byte order) -> tilec dtype names
_TYPESTR = {"f4": "f32", "f8": "f64", "f2": "f16", "i1": "i8", "i2": "i16", "i4": "i32", "i8": "i64",
            "u1": "u8", "u2": "u16", "u4": "u32", "u8": "u64", "b1": "i1"}
# DLPack (code, bits) -> tilec dtype names: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6,
# kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12
_DLPACK = {(0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64", (1, 8): "u8", (1, 16): "u16",
           (1, 32): "u32", (1, 64): "u64", (2, 16): "f16", (2, 32): "f32", (2, 64): "f64", (4, 16): "bf16",
           (6, 8): "i1", (10, 8): "f8e4m3", (12, 8): "f8e5m2"}
_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype, _capsule_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


class TensorView:
    """What a tensor argument is to the runtime: address, dtype name, shape and strides (elements).
    `keep` holds what must stay alive while the view is used (a DLPack capsule)."""
    __slots__ = ("data", "dtype", "shape", "strides", "keep")

    def __init__(self, data, dtype, shape, strides, keep=None):
        self.data, self.dtype, self.shape, self.strides, self.keep = data, dtype, tuple(shape), tuple(strides), keep


def _contiguous(shape):
    st, s = [], 1
    for n in reversed(shape):
        st.append(s)
        s *= n
    return tuple(reversed(st))


def _from_torch(t):
    name = str(t.dtype).replace("torch.", "")
    if name not in _TORCH:
        raise TypeError("a torch tensor of dtype %s: no tilec dtype for it" % name)
    if not getattr(t, "is_cuda", False):
        raise ValueError("a torch tensor on %s: tilec kernels take CUDA tensors" % getattr(t, "device", "the host"))
    return TensorView(t.data_ptr(), _TORCH[name], tuple(t.shape), tuple(t.stride()))


def _from_cai(cai):
    typestr = cai["typestr"]
    key = typestr[1:]
    if key not in _TYPESTR:
        raise TypeError("__cuda_array_interface__ typestr %r: no tilec dtype for it" % typestr)
    shape = tuple(cai["shape"])
    size = int(key[1:])
    strides = cai.get("strides")
    if strides is None:
        strides = _contiguous(shape)
    else:
        if any(s % size for s in strides):
            raise ValueError("__cuda_array_interface__ strides %r are not multiples of the element size" % (strides,))
        strides = tuple(s // size for s in strides)
    return TensorView(cai["data"][0] or 0, _TYPESTR[key], shape, strides)


def _from_dlpack(x):
    capsule = x.__dlpack__()
    p = _capsule_ptr(capsule, b"dltensor")
    # DLManagedTensor starts with its DLTensor
    dl = _DLTensor.from_address(p)
    if dl.device.device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise ValueError("a DLPack tensor on device type %d: tilec kernels take CUDA memory" % dl.device.device_type)
    key = (dl.dtype.code, dl.dtype.bits)
    if key not in _DLPACK or dl.dtype.lanes != 1:
        raise TypeError("DLPack dtype (code %d, %d bits, %d lanes): no tilec dtype for it" %
                        (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes))
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    strides = tuple(dl.strides[i] for i in range(dl.ndim)) if dl.strides else _contiguous(shape)
    data = (dl.data or 0) + dl.byte_offset
    return TensorView(data, _DLPACK[key], shape, strides, keep=capsule)


def is_tensor(x):
    return (callable(getattr(x, "data_ptr", None)) and hasattr(x, "dtype") and callable(getattr(x, "stride", None))) \
        or hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__") or isinstance(x, TensorView)


def view(x):
    """x as a TensorView (TypeError if it is no tensor)."""
    if isinstance(x, TensorView):
        return x
    if callable(getattr(x, "data_ptr", None)) and callable(getattr(x, "stride", None)) and hasattr(x, "dtype"):
        return _from_torch(x)
    if hasattr(x, "__cuda_array_interface__"):
        try:
            return _from_cai(x.__cuda_array_interface__)
        except (TypeError, AttributeError):
            if not hasattr(x, "__dlpack__"):
                raise
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(x)
    raise TypeError("%s is not a tensor (no __cuda_array_interface__ or __dlpack__)" % type(x).__name__)


def to_arg(lib, x, param_kind):
    """One tilert_arg for x; param_kind (None past the last parameter) picks tensor or pointer."""
    a = _rt.Arg()
    if isinstance(x, bool):
        a.kind, a.dtype, a.v.i = _rt.ARG_INT, lib.dtypes["i1"], int(x)
    elif isinstance(x, int):
        if x >= 1 << 63:
            a.kind, a.dtype, a.v.u = _rt.ARG_INT, lib.dtypes["u64"], x
        else:
            a.kind, a.dtype, a.v.i = _rt.ARG_INT, lib.dtypes["i64"], x
    elif isinstance(x, float):
        a.kind, a.dtype, a.v.f = _rt.ARG_FLOAT, lib.dtypes["f64"], x
    elif is_tensor(x):
        v = view(x)
        dt = lib.dtypes[v.dtype]
        if param_kind == _rt.PARAM_PTR:
            a.kind, a.dtype, a.v.ptr = _rt.ARG_PTR, dt, v.data or None
        else:
            if len(v.shape) > _rt.MAX_RANK:
                raise _rt._status_class("TILERT_ERROR_ARG_TYPE")(
                    "a tensor of rank %d: tilec kernels take ranks 1 to %d" % (len(v.shape), _rt.MAX_RANK))
            a.kind, a.dtype = _rt.ARG_TENSOR, dt
            t = a.v.tensor
            t.data, t.dtype, t.rank = v.data or None, dt, len(v.shape)
            for i, (n, s) in enumerate(zip(v.shape, v.strides)):
                t.shape[i], t.stride[i] = n, s
        return a, v.keep
    else:
        raise TypeError("an argument of type %s: tilec kernels take tensors, bool, int and float" % type(x).__name__)
    return a, None


def stream_handle(stream):
    """A CUstream as an integer: None (the legacy default stream), an int, an object with
    __cuda_stream__ (returns (version, handle)), .cuda_stream (torch) or .ptr (CuPy)."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream or None
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        h = proto() if callable(proto) else proto
        return int(h[1]) or None
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h or None
    raise TypeError("stream: %s is not a CUDA stream (pass an int, or an object with __cuda_stream__, "
                    ".cuda_stream or .ptr)" % type(stream).__name__)
