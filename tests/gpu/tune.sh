#!/usr/bin/env bash
# tune.sh TILEC GEMM_TILE: `tilec tune --device` on the stdlib GEMM (run by gpu-check): four
# candidates (BM 64 and 128 by BN 128 and 512; 128 x 512 needs more shared memory than there is:
# skipped),
# two shapes (a small one checked against the interpreter, a large one against the first
# candidate), outputs poisoned; then the table: timed, each entry's best the fastest candidate
# that passed, and a header made from it holds both specializations and the launcher by shape.
set -uo pipefail
tilec=$1 gemm=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tilec-tune.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$tilec" tune "$gemm" --kernel gemm --device --space BM=64,128 --space BN=128,512 --space BK=64 \
  --shape 'A=bf16[256,320] B=bf16[320,384] C=bf16[256,384]' \
  --shape 'A=bf16[2048,1024] B=bf16[1024,2048] C=bf16[2048,2048]' \
  --poison C --runs 10 -o "$work/gemm.json" 2>&1 | tee "$work/log" || fail "tilec tune failed"
cat "$work/gemm.json"
grep -qF '"timed": true' "$work/gemm.json" || fail "the table is not timed"
python3 - "$work/gemm.json" <<'PY' || fail "the table's choices"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["kernel"] == "gemm" and len(t["entries"]) == 2, t.keys()
for e in t["entries"]:
    ok = [c for c in e["candidates"] if c["status"] == "ok"]
    assert len(ok) == 3, ("three candidates must pass", e["shape"], e["candidates"])
    big = [c for c in e["candidates"] if c["defines"]["BM"] == "128" and c["defines"]["BN"] == "512"]
    assert len(big) == 1 and big[0]["status"] == "skipped" and "shared memory" in big[0]["note"], big
    best = min(ok, key=lambda c: c["median_us"])
    assert e["best"] == best["defines"], (e["best"], best)
    assert all(c["median_us"] > 0 and c["min_us"] <= c["median_us"] <= c["max_us"] for c in ok), ok
print("table ok:", [(e["shape"], e["best"]) for e in t["entries"]])
PY
"$tilec" "$gemm" --emit=header --embed --tune-table "$work/gemm.json" -o "$work/gemm_tuned.h" || fail "no header from the table"
b1=$(grep -m1 '"best"' "$work/gemm.json"); b2=$(grep '"best"' "$work/gemm.json" | tail -1)
if [ "$b1" != "$b2" ]; then   # two choices: the launcher by shape
  grep -qF 'gemm_tune_entry(' "$work/gemm_tuned.h" || fail "the header has no launcher by shape"
fi
echo "tune: ok"
