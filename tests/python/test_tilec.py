#!/usr/bin/env python3
"""The tilec Python package without a GPU (ctest python/tilec; the driver is forced missing with
TILERT_CUDA_LIBRARY): compiling with -D values, the metadata, grids, the runtime's argument checks
as typed errors, the tensor protocols (__cuda_array_interface__, DLPack, torch-like), streams,
the no-driver error, and tilec.stdlib.gemm, flash_attn, flash_attn_varlen, paged_attn_decode and
the MoE functions up to their launch (their argument checks, and their argument lists against
the compiled kernels' metadata)."""
import ctypes
import os
import sys
import unittest
from unittest import mock

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


def bf16(*shape, **kw):
    return TorchLike(list(shape), "bfloat16", **kw)


def i32(*shape):
    return TorchLike(list(shape), "int32")


def f32(*shape):
    return TorchLike(list(shape), "float32")


class StdlibAttention(unittest.TestCase):
    """tilec.stdlib's attention and decode functions without a GPU: argument errors before any
    compilation, then the compiled kernels' parameters against the arguments the functions pass,
    then the launch that needs the driver."""

    def params(self, file, kernel, defines):
        k = tilec.stdlib.compile(file, kernel=kernel, defines=defines, inspect_only=True).kernel(kernel)
        return [(p.name, p.kind, p.dtype, p.rank) for p in k.params]

    def test_flash_attn_errors(self):
        q, k = bf16(2, 8, 100, 128), bf16(2, 2, 300, 128)
        fa = tilec.stdlib.flash_attn
        with self.assertRaisesRegex(ValueError, "q must be 4-D"):
            fa(bf16(8, 100, 128), k, k)
        with self.assertRaisesRegex(TypeError, "q, k and v must have one dtype"):
            fa(q, k, TorchLike([2, 2, 300, 128], "float16"))
        with self.assertRaisesRegex(TypeError, "q must be bf16 or f16, got f32"):
            fa(f32(2, 8, 100, 128), k, k)
        with self.assertRaisesRegex(ValueError, "head dimension .* 64, 128 or 256, got 96"):
            fa(bf16(2, 8, 100, 96), bf16(2, 2, 300, 96), bf16(2, 2, 300, 96))
        with self.assertRaisesRegex(ValueError, "k must be \\[2, '\\*', '\\*', 128\\]"):
            fa(q, bf16(3, 2, 300, 128), k)
        with self.assertRaisesRegex(ValueError, "v must be"):
            fa(q, k, bf16(2, 2, 299, 128))
        with self.assertRaisesRegex(ValueError, "multiple of k's \\(3\\)"):
            fa(q, bf16(2, 3, 300, 128), bf16(2, 3, 300, 128))
        with self.assertRaisesRegex(TypeError, "sm_scale must be a finite number"):
            fa(q, k, k, sm_scale=float("nan"))
        with self.assertRaisesRegex(TypeError, "causal must be a bool"):
            fa(q, k, k, causal="yes")
        with self.assertRaisesRegex(ValueError, "out must be"):
            fa(q, k, k, out=bf16(2, 8, 100, 64))
        with self.assertRaisesRegex(TypeError, "lse must be f32"):
            fa(q, k, k, lse=bf16(2, 8, 100))
        with self.assertRaisesRegex(TypeError, "pass out="):
            fa(CAI([2, 8, 100, 128], "<f2"), CAI([2, 2, 300, 128], "<f2"), CAI([2, 2, 300, 128], "<f2"))

    def test_flash_attn_kernels(self):
        t4 = ("tensor", "bf16", 4)
        self.assertEqual(self.params("attention.tile", "flash_attn_fwd", {"T": "bf16", "D": 128}),
                         [("Q",) + t4, ("K",) + t4, ("V",) + t4, ("O",) + t4, ("sm_scale", "scalar", "f32", 0),
                          ("causal", "scalar", "i32", 0)])
        self.assertEqual(self.params("attention.tile", "flash_attn_fwd_lse", {"T": "bf16", "D": 128})[4],
                         ("LSE", "tensor", "f32", 3))
        q, k = bf16(2, 8, 100, 128), bf16(2, 2, 300, 128)
        with self.assertRaises(tilec.NoDriverError) as cm:
            tilec.stdlib.flash_attn(q, k, k, causal=True)
        self.assertIn(NODRV, str(cm.exception))
        with self.assertRaises(tilec.NoDriverError):
            tilec.stdlib.flash_attn(q, k, k, lse=True)     # allocates LSE (f32), then the launch

    def test_flash_attn_varlen(self):
        fv = tilec.stdlib.flash_attn_varlen
        q, k, cu = bf16(300, 8, 64), bf16(500, 2, 64), i32(4)
        with self.assertRaisesRegex(TypeError, "cu_seqlens_q must be i32"):
            fv(q, k, k, f32(4), cu, 100, 200)
        with self.assertRaisesRegex(ValueError, "B \\+ 1 >= 2 offsets"):
            fv(q, k, k, i32(4), i32(3), 100, 200)
        with self.assertRaisesRegex(ValueError, "max_seqlen_q must be an int >= 1"):
            fv(q, k, k, cu, cu, 0, 200)
        with self.assertRaisesRegex(ValueError, "v must be \\[500, 2, 64\\]"):
            fv(q, k, bf16(500, 1, 64), cu, cu, 100, 200)
        names = [p[0] for p in self.params("attention.tile", "flash_attn_varlen_fwd", {"T": "bf16", "D": 64})]
        self.assertEqual(names, ["Q", "K", "V", "O", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k",
                                 "sm_scale", "causal"])
        with self.assertRaises(tilec.NoDriverError):
            fv(q, k, k, cu, cu, 100, 200)

    def test_decode(self):
        pd = tilec.stdlib.paged_attn_decode
        q, kc, bt, sl = bf16(4, 1, 32, 128), bf16(64, 16, 8, 128), i32(4, 16), i32(4)
        with self.assertRaisesRegex(ValueError, "1 to 8 query tokens"):
            pd(bf16(4, 9, 32, 128), kc, kc, bt, sl)
        with self.assertRaisesRegex(TypeError, "k_cache must be bf16 or f8e4m3"):
            pd(q, TorchLike([64, 16, 8, 128], "float16"), kc, bt, sl)
        with self.assertRaisesRegex(ValueError, "multiple of the caches' \\(3\\)"):
            pd(q, bf16(64, 16, 3, 128), bf16(64, 16, 3, 128), bt, sl)
        with self.assertRaisesRegex(ValueError, "block_table must be \\[4, '\\*'\\]"):
            pd(q, kc, kc, i32(5, 16), sl)
        with self.assertRaisesRegex(ValueError, "seq_lens must be \\[4\\]"):
            pd(q, kc, kc, bt, i32(3))
        with self.assertRaisesRegex(ValueError, "split must be 'auto' or an int >= 1"):
            pd(q, kc, kc, bt, sl, split=0)
        with self.assertRaisesRegex(TypeError, "an f32 workspace"):
            pd(q, kc, kc, bt, sl, split=4)       # a torch-like stand-in: no workspace to be had
        # the automatic split: decode.tile's formula (2 programs an SM, 4 key blocks a split at least)
        self.assertEqual(tilec.stdlib.decode_splits(4, 1, 32, 8, 128, 16, 16, 132), 2)     # 256 keys: 2 x 4 blocks of 32
        self.assertEqual(tilec.stdlib.decode_splits(4, 1, 32, 8, 128, 16, 8, 132), 1)      # 128 keys: 4 blocks
        self.assertEqual(tilec.stdlib.decode_splits(4, 1, 32, 8, 128, 16, 256, 132), 9)   # 32 programs -> 9 splits
        self.assertEqual(tilec.stdlib.decode_splits(64, 1, 32, 8, 128, 16, 256, 132), 1)  # 512 programs fill the GPU
        d = {"T": "bf16", "KV": "bf16", "D": 128, "PAGE": 16, "SPLIT": -1}
        names = [p[0] for p in self.params("decode.tile", "paged_attn_decode", d)]
        self.assertEqual(names, ["Q", "Kc", "Vc", "block_table", "seq_lens", "O", "LSE", "Op", "Lp", "sm_scale",
                                 "k_scale", "v_scale"])
        with self.assertRaises(tilec.NoDriverError):
            pd(q, kc, kc, bt, sl, split=1)


class StdlibMoe(unittest.TestCase):
    """tilec.stdlib's MoE functions without a GPU, as StdlibAttention."""

    def params(self, kernel, defines):
        k = tilec.stdlib.compile("moe.tile", kernel=kernel, defines=defines, inspect_only=True).kernel(kernel)
        return [(p.name, p.kind, p.dtype) for p in k.params]

    def test_topk_softmax(self):
        ts = tilec.stdlib.moe_topk_softmax
        with self.assertRaisesRegex(TypeError, "logits must be f32"):
            ts(bf16(16, 64), 8)
        with self.assertRaisesRegex(ValueError, "topk must be a power of two in \\[1, E = 64\\], got 6"):
            ts(f32(16, 64), 6)
        with self.assertRaisesRegex(ValueError, "at most 1024 experts"):
            ts(f32(16, 2048), 8)
        self.assertEqual(self.params("moe_topk_softmax", {"NE": 64, "TOPK": 8, "BT": 16}),
                         [("logits", "tensor", "f32"), ("weights", "tensor", "f32"), ("ids", "tensor", "i32"),
                          ("renorm", "scalar", "i32")])
        with self.assertRaises(tilec.NoDriverError):
            ts(f32(16, 64), 8)        # allocates weights (f32) and ids (i32) beside logits

    def test_grouped_gemm(self):
        gg = tilec.stdlib.moe_grouped_gemm
        a, w, off = bf16(1024, 256), bf16(8, 512, 256), i32(9)
        with self.assertRaisesRegex(ValueError, "w must be \\['\\*', '\\*', 256\\]"):
            gg(a, bf16(8, 512, 128), off)
        with self.assertRaisesRegex(ValueError, "offsets must hold E \\+ 1 = 9 entries, got 8"):
            gg(a, w, i32(8))
        with self.assertRaisesRegex(TypeError, "offsets must be i32"):
            gg(a, w, f32(9))
        with self.assertRaisesRegex(TypeError, "w must be bf16"):
            gg(a, TorchLike([8, 512, 256], "float16"), off)
        with self.assertRaisesRegex(ValueError, "out must be \\[1024, 512\\]"):
            gg(a, w, off, out=bf16(1024, 256))
        with self.assertRaisesRegex(TypeError, "int is not a tensor"):
            gg(a, w, off, 128)      # no max_rows any more: the fourth argument is out
        self.assertEqual(self.params("moe_grouped_gemm", {"T": "bf16"}),
                         [("A", "tensor", "bf16"), ("W", "tensor", "bf16"), ("offsets", "ptr", "i32"),
                          ("C", "tensor", "bf16")])
        with self.assertRaises(tilec.NoDriverError):
            gg(a, w, off)

    def test_grouped_gemm_kn_scaled(self):
        kn, sc = tilec.stdlib.moe_grouped_gemm_kn, tilec.stdlib.moe_grouped_gemm_scaled
        a, off = bf16(1024, 256), i32(9)
        # _kn: w [E, K, N]
        with self.assertRaisesRegex(ValueError, "moe_grouped_gemm_kn: w must be \\['\\*', 256, '\\*'\\]"):
            kn(a, bf16(8, 512, 256), off)
        with self.assertRaisesRegex(ValueError, "moe_grouped_gemm_kn: offsets must hold E \\+ 1 = 9 entries"):
            kn(a, bf16(8, 256, 512), i32(10))
        with self.assertRaisesRegex(ValueError, "moe_grouped_gemm_kn: out must be \\[1024, 512\\]"):
            kn(a, bf16(8, 256, 512), off, out=bf16(1024, 256))
        self.assertEqual(self.params("moe_grouped_gemm_kn", {"T": "bf16"}),
                         [("A", "tensor", "bf16"), ("W", "tensor", "bf16"), ("offsets", "ptr", "i32"),
                          ("C", "tensor", "bf16")])
        with self.assertRaises(tilec.NoDriverError):
            kn(a, bf16(8, 256, 512), off)
        # _scaled: w [E, N, K], row_scale f32 [rows]
        w = bf16(8, 512, 256)
        with self.assertRaisesRegex(ValueError, "moe_grouped_gemm_scaled: w must be \\['\\*', '\\*', 256\\]"):
            sc(a, bf16(8, 256, 512), off, f32(1024))
        with self.assertRaisesRegex(TypeError, "row_scale must be f32"):
            sc(a, w, off, bf16(1024))
        with self.assertRaisesRegex(ValueError, "row_scale must be 1-D"):
            sc(a, w, off, f32(1024, 1))
        with self.assertRaisesRegex(ValueError, "row_scale must hold a's rows = 1024 entries, got 1000"):
            sc(a, w, off, f32(1000))
        with self.assertRaisesRegex(ValueError, "row_scale must be contiguous"):
            sc(a, w, off, TorchLike([1024], "float32", stride=(2,)))
        self.assertEqual(self.params("moe_grouped_gemm_scaled", {"T": "bf16"}),
                         [("A", "tensor", "bf16"), ("W", "tensor", "bf16"), ("offsets", "ptr", "i32"),
                          ("row_scale", "ptr", "f32"), ("C", "tensor", "bf16")])
        with self.assertRaises(tilec.NoDriverError):
            sc(a, w, off, f32(1024))

    def test_combine(self):
        mc = tilec.stdlib.moe_combine
        y, slots, w = bf16(600, 256), i32(64 * 8), f32(64, 8)
        with self.assertRaisesRegex(ValueError, "slot_of must hold T \\* topk = 512 entries, got 500"):
            mc(y, i32(500), w)
        with self.assertRaisesRegex(TypeError, "w must be f32"):
            mc(y, slots, bf16(64, 8))
        self.assertEqual(self.params("moe_combine", {"T": "bf16", "TOPK": 8}),
                         [("Y", "tensor", "bf16"), ("slot_of", "ptr", "i32"), ("w", "tensor", "f32"),
                          ("out", "tensor", "bf16")])
        with self.assertRaises(tilec.NoDriverError):
            mc(y, slots, w)


class StdlibLaunchChecks(unittest.TestCase):
    """Each tilec.stdlib function's launches, with the runtime's argument checks and grid instead
    of the launch (Kernel.grid: no driver): the arguments it builds (outputs it allocates, empty
    views, workspaces) satisfy the kernels' parameters and requires(...) clauses."""

    def setUp(self):
        self.calls, self.ptr = [], 0x7f0000000000
        real_compile, test = tilec.stdlib.compile, self

        def compile_inspect(*a, **kw):
            return real_compile(*a, inspect_only=True, **kw)

        def launch(k, *args, stream=None, grid=None):
            try:
                test.calls.append((k.name, k.grid(*args)))
            except tilec.GridError as e:   # checks passed; the grid needs the device's SM count
                test.assertIn("num_sms()", str(e))
                test.calls.append((k.name, "num_sms"))

        def workspace(like, shape):
            return self.t(list(shape), "float32")

        patches = [mock.patch.object(tilec.stdlib, "compile", compile_inspect),
                   mock.patch.object(tilec.Kernel, "__call__", launch),
                   mock.patch.object(tilec.stdlib, "_f32_empty", workspace)]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def t(self, shape, dtype):
        self.ptr += 1 << 32     # distinct, aligned addresses: nothing is read
        return TorchLike(shape, dtype, ptr=self.ptr)

    def test_attention(self):
        b = lambda *s: self.t(list(s), "bfloat16")   # noqa: E731
        i = lambda *s: self.t(list(s), "int32")      # noqa: E731
        st = tilec.stdlib
        st.flash_attn(b(2, 8, 300, 128), b(2, 2, 333, 128), b(2, 2, 333, 128), causal=True)
        o, lse = st.flash_attn(b(2, 8, 300, 128), b(2, 2, 333, 128), b(2, 2, 333, 128), lse=True)
        self.assertEqual((lse.shape, lse.dtype.name), ((2, 8, 300), "float32"))
        st.flash_attn_varlen(b(466, 8, 64), b(590, 2, 64), b(590, 2, 64), i(5), i(5), 300, 420, causal=True)
        st.paged_attn_decode(b(3, 3, 32, 128), b(77, 16, 8, 128), b(77, 16, 8, 128), i(3, 24), i(3), split=1)
        st.paged_attn_decode(b(3, 3, 32, 128), b(77, 16, 8, 128), b(77, 16, 8, 128), i(3, 24), i(3), lse=True,
                             split=4)
        self.assertEqual(self.calls, [
            ("flash_attn_fwd", (3, 16, 1)), ("flash_attn_fwd_lse", (3, 16, 1)),
            ("flash_attn_varlen_fwd", (3, 32, 1)),
            ("paged_attn_decode", "num_sms"),                   # split 1: no combine
            ("paged_attn_decode", (24, 4, 1)), ("paged_attn_decode_combine", (36, 4, 1))])

    def test_moe(self):
        st = tilec.stdlib
        w, ids = st.moe_topk_softmax(self.t([100, 64], "float32"), 8)
        self.assertEqual((w.shape, w.dtype.name, ids.shape, ids.dtype.name), ((100, 8), "float32", (100, 8), "int32"))
        a, off = self.t([640, 256], "bfloat16"), self.t([5], "int32")
        c = st.moe_grouped_gemm(a, self.t([4, 384, 256], "bfloat16"), off)
        self.assertEqual((c.shape, c.dtype.name), ((640, 384), "bfloat16"))
        c = st.moe_grouped_gemm_kn(a, self.t([4, 256, 384], "bfloat16"), off)
        self.assertEqual((c.shape, c.dtype.name), ((640, 384), "bfloat16"))
        c = st.moe_grouped_gemm_scaled(a, self.t([4, 384, 256], "bfloat16"), off, self.t([640], "float32"))
        self.assertEqual((c.shape, c.dtype.name), ((640, 384), "bfloat16"))
        st.moe_combine(self.t([300, 256], "bfloat16"), self.t([200], "int32"), self.t([50, 4], "float32"))
        # the grouped GEMMs: ceil(640 / 128) + 4 experts' M blocks at most, times 384 / 128 N blocks
        self.assertEqual(self.calls, [("moe_topk_softmax", (7, 1, 1)), ("moe_grouped_gemm", (9, 3, 1)),
                                      ("moe_grouped_gemm_kn", (9, 3, 1)), ("moe_grouped_gemm_scaled", (9, 3, 1)),
                                      ("moe_combine", (50, 1, 1))])


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if r.wasSuccessful() else 1)
