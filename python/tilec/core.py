"""core.py: compiling (the tilec binary), modules and kernels (libtilert)."""
import ctypes
import os
import subprocess
import tempfile
import threading

from . import _args, _rt


class Param:
    """One kernel parameter, from the cubin's metadata."""
    __slots__ = ("name", "kind", "dtype", "rank")

    def __init__(self, name, kind, dtype, rank):
        self.name, self.kind, self.dtype, self.rank = name, kind, dtype, rank

    def __repr__(self):
        if self.kind == "tensor":
            return "%s: tensor<%s, %d>" % (self.name, self.dtype, self.rank)
        if self.kind == "ptr":
            return "%s: ptr<%s>" % (self.name, self.dtype)
        return "%s: %s" % (self.name, self.dtype)


_KINDS = {_rt.PARAM_SCALAR: "scalar", _rt.PARAM_PTR: "ptr", _rt.PARAM_TENSOR: "tensor"}


class Kernel:
    """A kernel of a Module: its metadata, argument checks, grid and launch.

        k(x, y, out, n)                        # launch: grid from its grid(...) clause
        k(x, y, out, n, stream=s, grid=(g,))   # on a stream, with an explicit grid
        k.grid(x, y, out, n)                   # the grid the clause gives, checked, no launch
    Arguments: tensors (see tilec._args), bool, int, float; checked by libtilert, whose errors
    are raised as tilec.TilertError subclasses (ArgTypeError, ArgCountError, ...)."""

    def __init__(self, module, handle):
        self.module, self._h = module, handle
        lib = module._lib
        info = _rt.KernelInfo()
        lib.check(lib.lib.tilert_kernel_get_info(handle, ctypes.byref(info)), "kernel info")
        self.symbol = info.symbol.decode()
        self.name = info.source_name.decode()
        self.arch = info.arch.decode()
        self.warps = info.warps
        self.smem_static, self.smem_dynamic = info.smem_static, info.smem_dynamic
        self.grid_rank = info.grid_rank
        self.params = []
        for i in range(info.nparams):
            p = _rt.ParamInfo()
            lib.check(lib.lib.tilert_kernel_param(handle, i, ctypes.byref(p)), "kernel param")
            self.params.append(Param(p.name.decode(), _KINDS.get(p.kind, "?"), lib.dtype_names.get(p.dtype, "?"),
                                     p.rank))
        codes = {"scalar": _rt.PARAM_SCALAR, "ptr": _rt.PARAM_PTR, "tensor": _rt.PARAM_TENSOR}
        self._pkinds = [codes.get(p.kind) for p in self.params]
        self.specs = {}
        for i in range(info.nspecs):
            n, v = ctypes.c_char_p(), ctypes.c_char_p()
            lib.check(lib.lib.tilert_kernel_spec(handle, i, ctypes.byref(n), ctypes.byref(v)), "kernel spec")
            self.specs[n.value.decode()] = v.value.decode()

    def __repr__(self):
        return "<tilec.Kernel %s(%s)>" % (self.symbol, ", ".join(repr(p) for p in self.params))

    def _args(self, args):
        lib = self.module._lib
        arr = (_rt.Arg * max(len(args), 1))()
        keep = []
        for i, x in enumerate(args):
            a, k = _args.to_arg(lib, x, self._pkinds[i] if i < len(self._pkinds) else None)
            arr[i] = a
            keep.append(k)
        return arr, keep

    def grid(self, *args):
        """The launch grid (x, y, z) the kernel's grid(...) clause gives for these arguments, after
        the runtime's argument checks; no driver needed (works on an inspected module)."""
        lib = self.module._lib
        arr, keep = self._args(args)
        g = (ctypes.c_uint32 * 3)()
        lib.check(lib.lib.tilert_kernel_check(self._h, arr, len(args), g), self.symbol)
        del keep
        return tuple(g)

    def check(self, *args):
        """The runtime's argument checks alone (and the grid, if the kernel has a clause)."""
        lib = self.module._lib
        arr, keep = self._args(args)
        g = (ctypes.c_uint32 * 3)()
        lib.check(lib.lib.tilert_kernel_check(self._h, arr, len(args), g if self.grid_rank else None), self.symbol)
        del keep

    def __call__(self, *args, stream=None, grid=None):
        lib = self.module._lib
        arr, keep = self._args(args)
        s = _args.stream_handle(stream)
        if grid is None:
            st = lib.lib.tilert_launch(self._h, s, arr, len(args))
        else:
            grid = tuple(grid) + (1,) * (3 - len(grid))
            g = (ctypes.c_uint32 * 3)(*grid)
            st = lib.lib.tilert_launch_grid(self._h, s, g, arr, len(args))
        del keep
        lib.check(st, self.symbol)


class Module:
    """A loaded (or, with inspect, only read) cubin made by tilec."""

    def __init__(self, image, inspect=False, library=None):
        self._lib = _rt.lib(library)
        if isinstance(image, (str, os.PathLike)):
            with open(image, "rb") as f:
                image = f.read()
        self._image = bytes(image)
        h = ctypes.c_void_p()
        fn = self._lib.lib.tilert_module_inspect_data if inspect else self._lib.lib.tilert_module_load_data
        self._lib.check(fn(self._image, len(self._image), ctypes.byref(h)), "inspect" if inspect else "load")
        self._h = h
        self.inspect_only = inspect
        self.arch = self._lib.lib.tilert_module_arch(h).decode()
        self.kernels = [Kernel(self, self._lib.lib.tilert_module_kernel_at(h, i))
                        for i in range(self._lib.lib.tilert_module_kernel_count(h))]

    def kernel(self, name=None):
        """A kernel by symbol or source name (the first specialization); None: the only one."""
        if name is None:
            if len(self.kernels) != 1:
                raise ValueError("this module has %d kernels (%s): name one" %
                                 (len(self.kernels), ", ".join(k.symbol for k in self.kernels)))
            return self.kernels[0]
        k = ctypes.c_void_p()
        self._lib.check(self._lib.lib.tilert_kernel_get(self._h, name.encode(), ctypes.byref(k)), "kernel")
        for kk in self.kernels:
            if kk._h == k.value:
                return kk
        return Kernel(self, k.value)

    def __getitem__(self, name):
        return self.kernel(name)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and getattr(self, "_lib", None):
            try:
                self._lib.lib.tilert_module_unload(h)
            except Exception:  # noqa: BLE001 (at interpreter exit ctypes may be gone already)
                pass
            self._h = None

    def __repr__(self):
        return "<tilec.Module %s: %s>" % (self.arch, ", ".join(k.symbol for k in self.kernels))


def load(cubin, library=None):
    """Loads a cubin (a path or bytes) into the current CUDA context (the primary context of
    device 0 when none is current).  Without a GPU: tilec.NoDriverError / NoDeviceError."""
    return Module(cubin, inspect=False, library=library)


def inspect(cubin, library=None):
    """Reads a cubin's kernels and metadata without a driver: parameters, specializations, argument
    checks and grids (Kernel.grid), no launch."""
    return Module(cubin, inspect=True, library=library)


def _device_info(library=None):
    """The runtime's description of the current device, or None without a usable GPU."""
    lib = _rt.lib(library)
    if lib.lib.tilert_init() != 0:
        return None
    info = _rt.DeviceInfo()
    if lib.lib.tilert_device_get_info(ctypes.byref(info)) != 0:
        return None
    return info


def device_arch(library=None):
    """The tilec --arch of the current device ("sm_90a" for compute capability 9.0), or None
    without a usable GPU."""
    info = _device_info(library)
    if info is None:
        return None
    arch = "sm_%d%d" % (info.cc_major, info.cc_minor)
    return arch + "a" if arch == "sm_90" else arch


def device_sm_count(library=None):
    """The current device's number of SMs, or None without a usable GPU."""
    info = _device_info(library)
    return None if info is None else info.sm_count


def compile_cubin(source, kernel=None, defines=None, arch=None, options=(), tilec=None):
    """Runs tilec on a .tile file: the cubin's bytes.  defines: {"T": "bf16", "BN": 128};
    arch: default the current device's, else tilec's default (sm_90a).  A failure raises
    tilec.CompileError with tilec's diagnostics."""
    exe = tilec or _rt.find_tilec()
    if arch is None:
        try:
            arch = device_arch()
        except _rt.TilecError:
            arch = None
    with tempfile.TemporaryDirectory(prefix="tilec-py-") as tmp:
        out = os.path.join(tmp, "k.cubin")
        cmd = [exe, os.fspath(source), "--emit=cubin", "-o", out, "--diagnostics-color=never"]
        if kernel:
            cmd += ["--kernel", kernel]
        if arch:
            cmd += ["--arch=" + arch]
        for k, v in (defines or {}).items():
            cmd += ["-D", "%s=%s" % (k, v)]
        cmd += list(options)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise _rt.CompileError("cannot run %s: %s" % (exe, e), cmd) from None
        if r.returncode != 0:
            raise _rt.CompileError((r.stderr or r.stdout).strip() or "tilec exited %d" % r.returncode, cmd,
                                   r.returncode)
        with open(out, "rb") as f:
            return f.read()


_cache = {}
_cache_lock = threading.Lock()


def compile(source, kernel=None, defines=None, arch=None, options=(), inspect_only=False, tilec=None):
    """Compiles a .tile file and loads it: a Module (inspect_only: read without a driver).
    The same source (path and modification time), kernel, defines, arch and options compile once
    per process."""
    key = (os.path.abspath(os.fspath(source)), os.stat(source).st_mtime_ns, kernel,
           tuple(sorted((str(k), str(v)) for k, v in (defines or {}).items())), arch, tuple(options), tilec)
    with _cache_lock:
        image = _cache.get(key)
    if image is None:
        image = compile_cubin(source, kernel, defines, arch, options, tilec)
        with _cache_lock:
            _cache[key] = image
    return Module(image, inspect=inspect_only)
