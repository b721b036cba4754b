#!/usr/bin/env python3
"""The tilec Python package without a GPU (ctest python/tilec; the driver is forced missing with
TILERT_CUDA_LIBRARY): compiling with -D values, the metadata, grids, the runtime's argument checks
as typed errors, the tensor protocols (__cuda_array_interface__, DLPack, torch-like), streams,
the no-driver error, and tilec.stdlib.gemm up to its launch."""
import ctypes
import os
import sys
import unittest

import tilec
from tilec import _args

INPUTS = os.environ["TILEC_TEST_INPUTS"]
SCALE = os.path.join(INPUTS, "scale.tile")   # scale<T: type = f32, BN = 128>(x, out: tensor<T, 1>, n: i32)
VADD = os.path.join(INPUTS, "vadd.tile")     # vadd<BLOCK = 1024>(x, y, out: ptr<f32>, n: i32)
NODRV = "cannot open /nonexistent/libcuda.so.1"


class CAI:
    """A device array as CuPy or Numba describe one (nothing is allocated: the checks never read it)."""

    def __init__(self, shape, typestr, ptr=0x7f0000000000, strides=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


class TorchLike:
    """What tilec reads of a torch.Tensor (torch is not needed)."""

    class _Dtype:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return "torch." + self.name

    def __init__(self, shape, dtype, ptr=0x7f0000100000, stride=None, is_cuda=True):
        self.shape, self.dtype, self._ptr, self.is_cuda = tuple(shape), self._Dtype(dtype), ptr, is_cuda
        self._stride = stride or _args._contiguous(self.shape)

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._stride

    def new_empty(self, shape, dtype=None):
        return TorchLike(shape, dtype.name if dtype else self.dtype.name, ptr=self._ptr + (1 << 30))


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _args._DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackLike:
    """A DLPack producer (as JAX or CuPy): __dlpack__ returns a "dltensor" capsule."""

    def __init__(self, shape, code, bits, ptr=0x7f0000200000, device_type=2, strides=None):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self.m = _DLManaged()
        t = self.m.dl_tensor
        t.data, t.device.device_type, t.device.device_id, t.ndim = ptr, device_type, 0, len(shape)
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)) if strides else None

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.m), b"dltensor", None)

    def __dlpack_device__(self):
        return (2, 0)


def scale(T="f32", BN=64, **kw):
    return tilec.compile(SCALE, defines={"T": T, "BN": BN}, inspect_only=True, **kw)


class Compile(unittest.TestCase):
    def test_metadata(self):
        m = scale("bf16", 64)
        self.assertEqual(m.arch, "sm_90a")  # no device: tilec's default
        k = m.kernel()
        self.assertEqual((k.name, k.symbol), ("scale", "scale__T_bf16__BN_64"))
        self.assertEqual(k.specs, {"T": "bf16", "BN": "64"})
        self.assertEqual([(p.name, p.kind, p.dtype, p.rank) for p in k.params],
                         [("x", "tensor", "bf16", 1), ("out", "tensor", "bf16", 1), ("n", "scalar", "i32", 0)])
        self.assertEqual(k.grid_rank, 1)
        self.assertGreaterEqual(k.warps, 1)
        self.assertIs(m.kernel("scale"), k)
        self.assertIs(m["scale__T_bf16__BN_64"], k)
        self.assertEqual(repr(k.params[0]), "x: tensor<bf16, 1>")

    def test_arch_and_options(self):
        m = tilec.compile(VADD, kernel="vadd", defines={"BLOCK": 256}, arch="sm_80", options=["-O2"],
                          inspect_only=True)
        self.assertEqual(m.arch, "sm_80")
        self.assertEqual([(p.name, p.kind, p.dtype) for p in m.kernel().params],
                         [("x", "ptr", "f32"), ("y", "ptr", "f32"), ("out", "ptr", "f32"), ("n", "scalar", "i32")])
        # the same request compiles once per process: no new cache entry, the same image
        n = len(tilec.core._cache)
        again = tilec.compile(VADD, kernel="vadd", defines={"BLOCK": 256}, arch="sm_80", options=["-O2"],
                              inspect_only=True)
        self.assertEqual(len(tilec.core._cache), n)
        self.assertEqual(again._image, m._image)
        tilec.compile(VADD, kernel="vadd", defines={"BLOCK": 128}, arch="sm_80", inspect_only=True)
        self.assertEqual(len(tilec.core._cache), n + 1)

    def test_compile_error(self):
        with self.assertRaises(tilec.CompileError) as cm:
            tilec.compile(SCALE, defines={"BX": 1})
        self.assertIn("error: -D BX: no kernel has a compile-time parameter named 'BX'", str(cm.exception))
        self.assertIsInstance(cm.exception, tilec.TilecError)
        self.assertNotEqual(cm.exception.returncode, 0)

    def test_stdlib_kernel(self):
        k = tilec.stdlib.compile("softmax.tile", "softmax", {"T": "bf16", "BLOCK": 1024}, inspect_only=True).kernel()
        self.assertEqual((k.name, k.specs["T"], k.specs["BLOCK"]), ("softmax", "bf16", "1024"))
        self.assertEqual([(p.kind, p.dtype, p.rank) for p in k.params], [("tensor", "bf16", 2), ("tensor", "bf16", 2)])

    def test_inspect_file_and_bytes(self):
        image = tilec.compile_cubin(SCALE, defines={"BN": 32})
        self.assertEqual(image[:4], b"\x7fELF")
        self.assertEqual(tilec.inspect(image).kernel().specs["BN"], "32")


class Args(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.f16 = scale("f16", 128).kernel()
        cls.vadd = tilec.compile(VADD, defines={"BLOCK": 256}, inspect_only=True).kernel()

    def test_grid_from_the_clause(self):
        k = self.f16
        self.assertEqual(k.grid(CAI([1000], "<f2"), CAI([1000], "<f2"), 1000), (8, 1, 1))
        self.assertEqual(k.grid(CAI([1], "<f2"), CAI([1], "<f2"), 1025), (9, 1, 1))
        self.assertEqual(k.grid(CAI([0], "<f2"), CAI([0], "<f2"), 0), (0, 1, 1))
        self.assertEqual(self.vadd.grid(CAI([1000], "<f4"), CAI([1000], "<f4"), CAI([1000], "<f4"), 1000), (4, 1, 1))

    def test_typed_errors(self):
        k = self.f16
        x = CAI([16], "<f2")
        with self.assertRaises(tilec.ArgTypeError) as cm:
            k.grid(CAI([16], "<f4"), x, 16)
        self.assertIn("argument 0 ('x'): expected tensor<f16, 1>, got a tensor<f32, 1>", str(cm.exception))
        self.assertEqual(cm.exception.status_name, "TILERT_ERROR_ARG_TYPE")
        with self.assertRaises(tilec.ArgCountError):
            k.grid(x, 16)
        with self.assertRaises(tilec.ArgTypeError):
            k.grid(CAI([4, 4], "<f2"), x, 16)          # rank 2 for tensor<f16, 1>
        with self.assertRaises(tilec.ArgTypeError):
            k.grid(1.5, x, 16)                          # a scalar for a tensor
        with self.assertRaises(tilec.ArgTypeError):
            k.grid(x, x, x)                             # a tensor for i32
        with self.assertRaises(tilec.ArgValueError):
            k.grid(x, x, 1 << 40)                       # does not fit i32
        with self.assertRaises(tilec.ArgAlignError):
            self.vadd.grid(CAI([4], "<f4", ptr=0x7f0000000002), CAI([4], "<f4"), CAI([4], "<f4"), 4)
        with self.assertRaises(TypeError):
            k.grid("x", x, 16)
        # every runtime error is a TilertError and a RuntimeError
        self.assertTrue(issubclass(tilec.ArgTypeError, tilec.TilertError))
        self.assertTrue(issubclass(tilec.NoDriverError, RuntimeError))

    def test_strides(self):
        k = self.f16
        # a strided view: CAI strides in bytes become elements
        k.check(CAI([8], "<f2", strides=(4,)), CAI([8], "<f2"), 8)
        v = _args.view(CAI([8], "<f2", strides=(4,)))
        self.assertEqual((v.dtype, v.shape, v.strides), ("f16", (8,), (2,)))
        with self.assertRaises(ValueError):
            _args.view(CAI([8], "<f2", strides=(3,)))

    def test_dlpack_and_torch_like(self):
        bf = scale("bf16", 128).kernel()
        x = DLPackLike([300], code=4, bits=16)           # kDLBfloat 16
        self.assertEqual(_args.view(x).dtype, "bf16")
        self.assertEqual(bf.grid(x, DLPackLike([300], 4, 16), 300), (3, 1, 1))
        with self.assertRaises(tilec.ArgTypeError):
            bf.grid(DLPackLike([300], code=2, bits=32), x, 300)   # f32
        with self.assertRaises(ValueError):
            _args.view(DLPackLike([4], 4, 16, device_type=1))      # host memory
        v = _args.view(DLPackLike([2, 3], 2, 32, strides=(1, 2)))
        self.assertEqual((v.shape, v.strides), ((2, 3), (1, 2)))
        t = TorchLike([300], "bfloat16")
        self.assertEqual(bf.grid(t, t, 300), (3, 1, 1))
        self.assertEqual(_args.view(TorchLike([2], "float8_e4m3fn")).dtype, "f8e4m3")
        with self.assertRaises(ValueError):
            _args.view(TorchLike([2], "float32", is_cuda=False))

    def test_streams(self):
        class TorchStream:
            cuda_stream = 1234

        class ProtoStream:
            def __cuda_stream__(self):
                return (0, 99)

        self.assertIsNone(_args.stream_handle(None))
        self.assertEqual(_args.stream_handle(7), 7)
        self.assertEqual(_args.stream_handle(TorchStream()), 1234)
        self.assertEqual(_args.stream_handle(ProtoStream()), 99)
        with self.assertRaises(TypeError):
            _args.stream_handle("s")


class NoGpu(unittest.TestCase):
    def test_load_says_no_driver(self):
        image = tilec.compile_cubin(SCALE)
        with self.assertRaises(tilec.NoDriverError) as cm:
            tilec.load(image)
        self.assertIn(NODRV, str(cm.exception))
        self.assertEqual(cm.exception.status_name, "TILERT_ERROR_NO_DRIVER")
        with self.assertRaises(tilec.NoDriverError):
            tilec.compile(SCALE)                      # compile and load
        self.assertIsNone(tilec.device_arch())

    def test_inspected_modules_do_not_launch(self):
        k = scale().kernel()
        x = CAI([4], "<f4")
        with self.assertRaises(tilec.TilertError) as cm:
            k(x, x, 4)
        self.assertIsInstance(cm.exception, (tilec.InspectOnlyError, tilec.NoDriverError))
        with self.assertRaises(tilec.ArgCountError):   # the checks come first
            k(x, x)

    def test_stdlib_gemm(self):
        a, b = TorchLike([256, 128], "bfloat16"), TorchLike([128, 64], "bfloat16")
        with self.assertRaises(ValueError):
            tilec.stdlib.gemm(a, TorchLike([64, 64], "bfloat16"))
        with self.assertRaises(TypeError):
            tilec.stdlib.gemm(a, TorchLike([128, 64], "float16"))
        with self.assertRaises(TypeError):
            tilec.stdlib.gemm(CAI([256, 128], "<f2"), CAI([128, 64], "<f2"))   # no out, no new_empty
        with self.assertRaises(ValueError):
            tilec.stdlib.gemm(a, b, out=TorchLike([256, 32], "bfloat16"))
        with self.assertRaises(tilec.NoDriverError) as cm:
            tilec.stdlib.gemm(a, b)                   # compiles stdlib gemm, then needs the GPU
        self.assertIn(NODRV, str(cm.exception))


class GemmPlan(unittest.TestCase):
    """tilec.stdlib.gemm_plan, the shape-to-configuration rule (issue 13): pure Python."""

    def test_small_m_swaps_and_splits(self):
        for kind in ("bf16", "fp8", "blockscale"):
            p = tilec.stdlib.gemm_plan(kind, 16, 4096, 7168, 132)
            self.assertTrue(p["swap"], kind)
            self.assertEqual(p["tiles"][0], 16)            # no padded rows of A
            self.assertGreater(p["split"], 1)              # 32 column blocks alone leave 100 SMs idle
            self.assertEqual(p["suffix"], "_swapab_splitk")

    def test_large_problems_take_the_plain_kernel(self):
        for kind in ("bf16", "fp8"):
            p = tilec.stdlib.gemm_plan(kind, 4096, 4096, 4096, 132)
            self.assertEqual((p["suffix"], p["split"], p["tiles"][:2]), ("", 1, (128, 256)), kind)
        p = tilec.stdlib.gemm_plan("blockscale", 8192, 8192, 8192, 132)
        self.assertEqual((p["suffix"], p["split"]), ("", 1))
        self.assertLessEqual(p["tiles"][1], 128)           # a block of N inside one scale block

    def test_split_limits(self):
        p = tilec.stdlib.gemm_plan("bf16", 128, 4096, 7168, 132, max_split=1)
        self.assertEqual(p["split"], 1)
        self.assertNotIn("_splitk", p["suffix"])
        # K = 256 is 4 steps of 64: a split would leave fewer than GEMM_MIN_STEPS each
        self.assertEqual(tilec.stdlib.gemm_plan("bf16", 16, 256, 256, 132)["split"], 1)
        for m in (1, 64, 128, 1024):
            p = tilec.stdlib.gemm_plan("bf16", m, 2112, 7168, 132)
            steps = 7168 // p["tiles"][2]
            self.assertGreaterEqual(steps // p["split"], tilec.stdlib.GEMM_MIN_STEPS)

    def test_bad_kind(self):
        with self.assertRaises(ValueError):
            tilec.stdlib.gemm_plan("f32", 16, 16, 16)
        with self.assertRaises(ValueError):
            tilec.stdlib.gemm(TorchLike([16, 16], "bfloat16"), TorchLike([16, 16], "bfloat16"), config="fast")


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if r.wasSuccessful() else 1)
