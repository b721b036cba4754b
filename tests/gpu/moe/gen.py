#!/usr/bin/env python3
"""gen.py: writes the index inputs of the moe_* cases of tests/gpu/cases.txt (random data from
`tilec run` cannot be routing indices): python3 tests/gpu/moe/gen.py (deterministic; the .npy
files beside it are its output, committed).
  ids_300x8.npy      300 tokens top-8 over E = 37 experts, 9 of them never chosen, one hot one
  ids_16x8.npy       16 tokens top-8 over E = 256 (decode), ids_1x8.npy: one token
  counts_300x8.npy   the histogram of ids_300x8 (the input of moe_align_offsets)
  slot_of_300x8.npy  an align step's slots for ids_300x8 with BM = 64 (rows of Xs: 3776)
  sorted_300x8.npy   its sorted ids ([0, total): -1 in padding slots)
  nrows_650.npy      [650]: the row count moe_swiglu reads
  block_expert_13_bm64.npy, block_expert_13_bm128.npy   the expert of each M block after an align
                     step with BM = 64 / 128 of the counts COUNTS_13 over E = 13 (5 experts empty,
                     one of 150 rows), -1 past the padded total up to cdiv(n, BM) + E blocks
  masked_m_5.npy     per-expert row counts of the masked FP8 GEMM over E = 5, max_m = 100 (0 rows,
                     all, ragged, 250: past max_m, one row); masked_m_5b.npy for max_m = 200
"""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(name, vals):
    hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }" % len(vals)
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%di" % len(vals), *vals))


def route(rng, T, E, K, experts):
    ids = []
    for _ in range(T):
        ids += rng.sample(experts, K)
    return ids


rng = random.Random(12)
E = 37
experts = [e for e in range(E) if e % 4 != 1] + [5] * 40      # 9 unused experts; 5 is hot (drawn once per token at most)
ids = route(rng, 300, E, 8, sorted(set(experts)))
ids = [5 if rng.random() < 0.05 and 5 not in ids[t - t % 8:t - t % 8 + 8] else x for t, x in enumerate(ids)]
npy("ids_300x8.npy", ids)
npy("counts_300x8.npy", [ids.count(e) for e in range(E)])
BM = 64
counts = [ids.count(e) for e in range(E)]
padded = [(c + BM - 1) // BM * BM for c in counts]
start, sorted_ids, slot_of = 0, [], [0] * len(ids)
for e in range(E):
    rows = [i for i, x in enumerate(ids) if x == e]
    for j, i in enumerate(rows):
        slot_of[i] = start + j
    sorted_ids += rows + [-1] * (padded[e] - len(rows))
    start += padded[e]
npy("slot_of_300x8.npy", slot_of)
npy("sorted_300x8.npy", sorted_ids)
print("rows of Xs:", start)
npy("ids_16x8.npy", route(rng, 16, 256, 8, list(range(256))))
npy("ids_1x8.npy", route(rng, 1, 256, 8, list(range(256))))
npy("nrows_650.npy", [650])

COUNTS_13 = [0, 150, 3, 0, 64, 65, 1, 0, 0, 40, 7, 0, 129]
for BM in (64, 128):
    blocks = []
    for e, c in enumerate(COUNTS_13):
        blocks += [e] * ((c + BM - 1) // BM)
    max_blocks = (sum(COUNTS_13) + BM - 1) // BM + len(COUNTS_13)
    npy("block_expert_13_bm%d.npy" % BM, blocks + [-1] * (max_blocks - len(blocks)))
    print("BM = %d: %d blocks used of %d (A: at most %d rows)" % (BM, len(blocks), max_blocks, max_blocks * BM))
npy("masked_m_5.npy", [0, 100, 37, 250, 1])
npy("masked_m_5b.npy", [0, 200, 129, 1, 64])
