"""tilec: compile tile-language kernels and launch them from Python.

Pure Python over ctypes: it runs the tilec compiler and calls libtilert.so (found as
tilec._rt.find_tilec / find_library say; TILEC and TILERT_LIBRARY override).  Tensors are
anything with __cuda_array_interface__ or DLPack (torch, CuPy, JAX); torch is not a dependency.

    import tilec
    mod = tilec.compile("vadd.tile", defines={"BLOCK": 256})   # tilec --emit=cubin, then load
    k = mod.kernel("vadd")
    k.params                                                   # from the cubin's metadata
    k(x, y, out, n, stream=torch.cuda.current_stream())        # grid from the grid(...) clause
    tilec.stdlib.gemm(a, b)                                    # the stdlib GEMM

Errors: tilec.CompileError (tilec's diagnostics), tilec.TilertError and one subclass per
runtime status (NoDriverError, NoDeviceError, ArgCountError, ArgTypeError, ArgAlignError,
ArgValueError, GridError, ...), carrying the runtime's message.
"""
from . import stdlib
from ._rt import CompileError, TilecError, TilertError, _STATUS_CLASSES, find_library, find_stdlib, find_tilec
from ._rt import lib as _library
from .core import Kernel, Module, Param, compile, compile_cubin, device_arch, inspect, load

__version__ = "0.1.0"

# one class per runtime status, as module attributes: tilec.ArgTypeError, tilec.NoDriverError, ...
for _cls in list(_STATUS_CLASSES.values()):
    globals()[_cls.__name__] = _cls
del _cls


def library(path=None):
    """The loaded libtilert (path: use that file; TILERT_LIBRARY is the default)."""
    return _library(path)


__all__ = ["CompileError", "TilecError", "TilertError", "Kernel", "Module", "Param", "compile", "compile_cubin",
           "device_arch", "inspect", "load", "stdlib", "library", "find_tilec", "find_library", "find_stdlib"] + \
          [c.__name__ for c in _STATUS_CLASSES.values()]
