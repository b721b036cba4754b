#!/usr/bin/env bash
# tune-stdlib.sh: tunes the stdlib's GEMM, attention and MoE kernels on this machine's GPU with
# `tilec tune --device` and writes their tables (stdlib/tune/KERNEL.json, committed like sources;
# lang/REFERENCE.md, "Tuning: tilec tune").  Each run is small (four candidates, two or three
# shapes, 10 timed runs each), so the three take a few minutes on one H200.
#
#   scripts/tune-stdlib.sh [--tilec PATH] [--out DIR] [--only KERNEL]
#
# --tilec: the tilec to run (default: $TILEC, else build/tools/tilec, else .gpu/bin/tilec, the
# GPU bundle's); --out: where the tables go (default: stdlib/tune); --only: one of gemm,
# flash_attn_fwd, moe_grouped_gemm.  On the GPU machine, from the repository root (with the
# bundle of scripts/gpu-bundle.sh carried as .gpu):
#   run(command="scripts/tune-stdlib.sh --tilec .gpu/bin/tilec --out $OUT/tune", carry=[".gpu"])
# then copy $OUT/tune/*.json to stdlib/tune/ and commit them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tilec=${TILEC:-}
out=$root/stdlib/tune
only=
while [ $# -gt 0 ]; do
  case $1 in
    --tilec) tilec=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "tune-stdlib.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$tilec" ]; then
  for t in "$root/build/tools/tilec" "$root/.gpu/bin/tilec"; do [ -x "$t" ] && tilec=$t && break; done
fi
[ -n "$tilec" ] && [ -x "$tilec" ] || { echo "tune-stdlib.sh: no tilec (give --tilec PATH)" >&2; exit 2; }
case $only in ''|gemm|flash_attn_fwd|moe_grouped_gemm) ;; *) echo "tune-stdlib.sh: --only $only: not a tuned kernel" >&2; exit 2 ;; esac
mkdir -p "$out"
tilec=$(cd "$(dirname "$tilec")" && pwd)/$(basename "$tilec")   # absolute: the script changes folder
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tune-stdlib.XXXXXX")
trap 'rm -rf "$work"' EXIT
common=(--device --runs 10 --warmup 3)
# the tables name their source relative to the repository root, wherever this runs from
cd "$root"

want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

# Each kernel's space is its tune(...) clause (four candidates each).
# gemm: C[M, N] = A[M, K] B[K, N], bf16; the 128 x 256 default against 128 x 128, 64 x 256 and
# 64 x 128 at a large square problem, a small one (few blocks of 128 x 256) and a long-K one
if want gemm; then
  "$tilec" tune stdlib/gemm.tile --kernel gemm "${common[@]}" \
    --shape 'A=bf16[4096,4096] B=bf16[4096,4096] C=bf16[4096,4096]' \
    --shape 'A=bf16[1024,4096] B=bf16[4096,1024] C=bf16[1024,1024]' \
    --shape 'A=bf16[2048,8192] B=bf16[8192,2048] C=bf16[2048,2048]' \
    --poison C -o "$out/gemm.json"
fi

# flash_attn_fwd: Q, K, V, O [B, H, S, 128] bf16; BM x BN tiles of queries x keys, causal and not,
# at 2048 and 8192 tokens
if want flash_attn_fwd; then
  "$tilec" tune stdlib/attention.tile --kernel flash_attn_fwd "${common[@]}" \
    --shape 'Q=bf16[4,16,2048,128] K=bf16[4,16,2048,128] V=bf16[4,16,2048,128] O=bf16[4,16,2048,128] sm_scale=0.088 causal=0' \
    --shape 'Q=bf16[4,16,2048,128] K=bf16[4,16,2048,128] V=bf16[4,16,2048,128] O=bf16[4,16,2048,128] sm_scale=0.088 causal=1' \
    --shape 'Q=bf16[1,16,8192,128] K=bf16[1,16,8192,128] V=bf16[1,16,8192,128] O=bf16[1,16,8192,128] sm_scale=0.088 causal=1' \
    --poison O -o "$out/flash_attn_fwd.json"
fi

# moe_grouped_gemm: 8 experts, rows sorted by expert (offsets[e] .. offsets[e + 1]), W [E, N, K];
# 256 rows per expert (prefill) and 32 (decode); offsets come from a file (random data would not
# be offsets)
if want moe_grouped_gemm; then
  command -v python3 >/dev/null || { echo "tune-stdlib.sh: python3 writes the MoE offsets; it is missing" >&2; exit 1; }
  python3 - "$work" <<'PY'
import struct, sys
def npy_i32(path, values):   # a 1-d little-endian int32 .npy (format 1.0), no NumPy needed
    head = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + struct.pack("<%di" % len(values), *values))
for rows in (256, 32):
    npy_i32("%s/offsets_%d.npy" % (sys.argv[1], rows), [e * rows for e in range(9)])
PY
  "$tilec" tune stdlib/moe.tile --kernel moe_grouped_gemm "${common[@]}" \
    --shape "A=bf16[2048,4096] W=bf16[8,2048,4096] offsets=$work/offsets_256.npy C=bf16[2048,2048]" \
    --shape "A=bf16[256,4096] W=bf16[8,2048,4096] offsets=$work/offsets_32.npy C=bf16[256,2048]" \
    --poison C -o "$out/moe_grouped_gemm.json"
  # the table names the offsets by their temporary path: name them by what they hold instead
  sed -i "s#offsets=$work/offsets_\([0-9]*\).npy#offsets=OFFSETS_\1_PER_EXPERT.npy#g" "$out/moe_grouped_gemm.json"
fi
ls -l "$out"
