#!/usr/bin/env bash
# ptx-snapshot.sh TILEC OUTDIR [ARCH...]: the PTX of every kernel of stdlib/*.tile and
# examples/*.tile (default parameters) for each ARCH (default: sm_90a sm_89 sm_80), one
# file per source and arch, and OUTDIR/shared.txt: per kernel, how many st.shared,
# ld.shared and bar.sync its PTX holds.  For refactors that must not change code
# generation: snapshot before and after, then `diff -r BEFORE AFTER`.
set -eu
tilec=$(realpath "$1") out=$(mkdir -p "$2" && realpath "$2")
shift 2
archs=${*:-sm_90a sm_89 sm_80}
cd "$(dirname "$0")/.." # relative source paths: the PTX's .file lines do not depend on the checkout
: > "$out/shared.txt"
for f in stdlib/*.tile examples/*.tile; do
  stem=$(basename "$(dirname "$f")")_$(basename "$f" .tile)
  for a in $archs; do
    ptx=$out/$stem.$a.ptx
    "$tilec" "$f" --arch="$a" --emit=ptx -o "$ptx"
    awk -v tag="$stem.$a" '
      /^\.visible \.entry/ { k = $3; sub(/\(.*/, "", k); order[n++] = k }
      /st\.shared/ { st[k]++ } /ld\.shared/ { ld[k]++ } /bar\.sync/ { bs[k]++ }
      END { for (i = 0; i < n; i++) { k = order[i]
              printf "%s %s st.shared=%d ld.shared=%d bar.sync=%d\n", tag, k, st[k], ld[k], bs[k] } }' \
      "$ptx" >> "$out/shared.txt"
  done
done
