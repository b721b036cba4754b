"""_rt.py: libtilert through ctypes: the library, its structs, its statuses as exceptions.

The status and dtype names come from the library itself (tilert_status_string,
tilert_dtype_name), so this file does not restate the runtime's numbering; only the
structs (tilert_tensor, tilert_arg, the info structs) are declared again, as ctypes needs.
"""
import ctypes
import os
import shutil

MAX_RANK = 4  # TILERT_MAX_RANK

# tilert_arg_kind and tilert_param_kind (runtime/tilert.h)
ARG_TENSOR, ARG_PTR, ARG_INT, ARG_FLOAT, ARG_BITS = 1, 2, 3, 4, 5
PARAM_SCALAR, PARAM_PTR, PARAM_TENSOR = 0, 1, 2


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("stride", ctypes.c_int64 * MAX_RANK)]


class ArgValue(ctypes.Union):
    _fields_ = [("tensor", Tensor), ("ptr", ctypes.c_void_p), ("i", ctypes.c_int64),
                ("u", ctypes.c_uint64), ("f", ctypes.c_double), ("bits", ctypes.c_uint64)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("dtype", ctypes.c_int), ("v", ArgValue)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("ordinal", ctypes.c_int), ("cc_major", ctypes.c_int), ("cc_minor", ctypes.c_int),
                ("sm_count", ctypes.c_int), ("max_smem_per_block_optin", ctypes.c_int),
                ("name", ctypes.c_char * 96)]


class ParamInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("ntma", ctypes.c_int), ("tma_optional", ctypes.c_int)]


class KernelInfo(ctypes.Structure):
    _fields_ = [("symbol", ctypes.c_char_p), ("source_name", ctypes.c_char_p), ("arch", ctypes.c_char_p),
                ("nparams", ctypes.c_int), ("nspecs", ctypes.c_int), ("warps", ctypes.c_int),
                ("smem_static", ctypes.c_uint32), ("smem_dynamic", ctypes.c_uint32), ("grid_rank", ctypes.c_int)]


# ---- errors ----------------------------------------------------------------------------------

class TilecError(RuntimeError):
    """Base of every error this package raises."""


class CompileError(TilecError):
    """tilec failed: the message holds its diagnostics (file:line:col: error: ...)."""

    def __init__(self, message, command=None, returncode=None):
        super().__init__(message)
        self.command, self.returncode = command, returncode


class TilertError(TilecError):
    """A libtilert call failed: .status (the number), .status_name ("TILERT_ERROR_ARG_TYPE") and
    the runtime's message.  Each status has its own subclass (tilec.ArgTypeError, ...)."""
    status = None
    status_name = None


def _class_name(status_name):
    # TILERT_ERROR_ARG_TYPE -> ArgTypeError; TILERT_ERROR_IO -> IOError_ would shadow a builtin: IoError
    words = status_name[len("TILERT_ERROR_"):].split("_")
    return "".join(w[:1] + w[1:].lower() for w in words) + "Error"


# status name -> the exception class, made once the library is open (see _Lib.__init__); the names
# below exist before that, so that `except tilec.NoDriverError` works in any order.
_STATUS_CLASSES = {}
_KNOWN = ["INVALID_VALUE", "OUT_OF_MEMORY", "IO", "NO_DRIVER", "NO_DEVICE", "INVALID_IMAGE", "ARCH_MISMATCH",
          "BAD_METADATA", "NOT_FOUND", "ARG_COUNT", "ARG_TYPE", "ARG_ALIGN", "ARG_VALUE", "GRID", "NO_GRID",
          "RESOURCES", "CONTEXT", "INSPECT_ONLY", "CUDA"]


def _status_class(status_name):
    cls = _STATUS_CLASSES.get(status_name)
    if cls is None:
        cls = type(_class_name(status_name), (TilertError,), {"status_name": status_name, "__doc__": status_name})
        _STATUS_CLASSES[status_name] = cls
    return cls


for _n in _KNOWN:
    _status_class("TILERT_ERROR_" + _n)


# ---- finding the files -------------------------------------------------------------------------

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCE_ROOT = os.path.normpath(os.path.join(_HERE, "..", ".."))  # python/tilec -> the source tree


def find_tilec():
    """The tilec binary: $TILEC, else tilec on PATH, else build/tools/tilec of the source tree."""
    env = os.environ.get("TILEC")
    if env:
        return env
    found = shutil.which("tilec")
    if found:
        return found
    cand = os.path.join(_SOURCE_ROOT, "build", "tools", "tilec")
    if os.access(cand, os.X_OK):
        return cand
    raise TilecError("tilec not found: set TILEC to the compiler (an install's bin/tilec or a build's tools/tilec), "
                     "or put it on PATH")


def find_library():
    """libtilert.so: $TILERT_LIBRARY, else beside the compiler (PREFIX/lib, BUILD/runtime)."""
    env = os.environ.get("TILERT_LIBRARY")
    if env:
        return env
    tried = []
    try:
        bindir = os.path.dirname(os.path.realpath(find_tilec()))
        for rel in ("../lib/libtilert.so", "../runtime/libtilert.so"):
            cand = os.path.normpath(os.path.join(bindir, rel))
            tried.append(cand)
            if os.path.exists(cand):
                return cand
    except TilecError:
        pass
    raise TilecError("libtilert.so not found (looked at %s): set TILERT_LIBRARY to it" %
                     (", ".join(tried) if tried else "nothing: no tilec either"))


def find_stdlib():
    """The stdlib's .tile folder: $TILEC_STDLIB_DIR, else PREFIX/share/tilec/stdlib beside an
    installed compiler, else stdlib/ of the source tree."""
    env = os.environ.get("TILEC_STDLIB_DIR")
    if env:
        return env
    try:
        cand = os.path.normpath(os.path.join(os.path.dirname(os.path.realpath(find_tilec())),
                                             "..", "share", "tilec", "stdlib"))
        if os.path.isdir(cand):
            return cand
    except TilecError:
        pass
    cand = os.path.join(_SOURCE_ROOT, "stdlib")
    if os.path.isdir(cand):
        return cand
    raise TilecError("the stdlib's .tile sources were not found: set TILEC_STDLIB_DIR")


# ---- the library ---------------------------------------------------------------------------------

class _Lib:
    def __init__(self, path):
        self.path = path
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise TilecError("cannot load libtilert from %s: %s" % (path, e)) from None
        self.lib = lib
        vp, i, cp = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
        sig = {
            "tilert_status_string": (cp, [i]),
            "tilert_last_error": (cp, []),
            "tilert_dtype_name": (cp, [i]),
            "tilert_dtype_size": (ctypes.c_size_t, [i]),
            "tilert_init": (i, []),
            "tilert_device_get_info": (i, [ctypes.POINTER(DeviceInfo)]),
            "tilert_module_load_data": (i, [vp, ctypes.c_size_t, ctypes.POINTER(vp)]),
            "tilert_module_inspect_data": (i, [vp, ctypes.c_size_t, ctypes.POINTER(vp)]),
            "tilert_module_unload": (i, [vp]),
            "tilert_module_arch": (cp, [vp]),
            "tilert_module_kernel_count": (i, [vp]),
            "tilert_module_kernel_at": (vp, [vp, i]),
            "tilert_kernel_get": (i, [vp, cp, ctypes.POINTER(vp)]),
            "tilert_kernel_get_info": (i, [vp, ctypes.POINTER(KernelInfo)]),
            "tilert_kernel_param": (i, [vp, i, ctypes.POINTER(ParamInfo)]),
            "tilert_kernel_spec": (i, [vp, i, ctypes.POINTER(cp), ctypes.POINTER(cp)]),
            "tilert_kernel_check": (i, [vp, ctypes.POINTER(Arg), i, ctypes.POINTER(ctypes.c_uint32)]),
            "tilert_launch": (i, [vp, vp, ctypes.POINTER(Arg), i]),
            "tilert_launch_grid": (i, [vp, vp, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(Arg), i]),
            "tilert_stream_synchronize": (i, [vp]),
        }
        for name, (res, args) in sig.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        # the runtime's own names for its statuses and dtypes
        self.status_names = {}
        s = 0
        while True:
            name = lib.tilert_status_string(s).decode()
            if "(unknown)" in name:
                break
            self.status_names[s] = name
            s += 1
        self.dtypes = {}    # "bf16" -> code
        self.dtype_size = {}
        t = 1
        while True:
            name = lib.tilert_dtype_name(t).decode()
            if name == "?":
                break
            self.dtypes[name] = t
            self.dtype_size[t] = lib.tilert_dtype_size(t)
            t += 1
        self.dtype_names = {v: k for k, v in self.dtypes.items()}

    def error(self, status, what=None):
        name = self.status_names.get(status, "TILERT_ERROR_(unknown)")
        cls = _status_class(name)
        msg = self.lib.tilert_last_error().decode(errors="replace")
        e = cls("%s%s: %s" % (what + ": " if what else "", name, msg))
        e.status = status
        return e

    def check(self, status, what=None):
        if status != 0:
            raise self.error(status, what)


_lib = None


def lib(path=None):
    """The loaded libtilert (path: load that file instead, once, before any other use)."""
    global _lib
    if _lib is None or (path and os.path.abspath(path) != os.path.abspath(_lib.path)):
        _lib = _Lib(path or find_library())
    return _lib
