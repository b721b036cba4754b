#!/bin/bash
# session 10, call B (at f0f2489, before its D = 256 fix: rotated loop, ping-pong switchable): ping-pong x rotated/unrotated
# var/old/stdlib/attention.tile is the unrotated attention.tile of e37b155
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
export PATH=$PWD/bin:$PATH
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
run() { local name=$1 lim=$2; shift 2; timeout $lim "$@" > $L/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 ))s"; [ $rc -ne 0 ] && tail -8 $L/$name.log; }
B="python3 bench/bench.py --tilec bin/tilec --lib lib/libtilert.so --only attention --runs 20"
TILEC_WS_PINGPONG=1 run b_rot_pp 150 $B --root src
TILEC_WS_PINGPONG=0 run b_rot 150 $B --root src
TILEC_WS_PINGPONG=1 run b_old_pp 150 $B --root var/old
TILEC_WS_PINGPONG=0 run b_old 150 $B --root var/old
