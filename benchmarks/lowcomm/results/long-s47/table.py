"""Step-2000 bits/byte per seed, 2 workers: session 45-46's seeds 0-2 and session 47's seeds 3-4 on this CPU model."""
import glob
import json
import statistics

# Seeds 0-2 of float32 DiLoCo are session 45's race runs (s46/table.py has the same numbers)
DILOCO = {0: 1.8431859234693229, 1: 1.8173092418378538, 2: 1.885643323483487}


def runs(pattern):
    for f in sorted(glob.glob(pattern)):
        for line in open(f):
            line = line.strip()
            line = line[7:] if line.startswith("RESULT ") else line
            if line.startswith("{"):
                yield json.loads(line)


def key(d):
    a = d["args"]
    return (d["ranks"], a["method"], a["compression"], a["outer_lr"], a["outer_momentum"], a["sync_every"],
            a.get("fragments"))


final = {}
for d in runs("/work/results/s4[567]/*.jsonl"):
    if d["args"].get("steps") != "2000" or d["args"].get("fragments") not in ("1", None):
        continue
    v = [c["val_bpb"] for c in d["curve"] if c["step"] == 2000][0]
    final.setdefault(key(d), {})[int(d["args"]["seed"])] = (v, d.get("stats") or {}, d["wall_s"])
for k, by_seed in sorted(final.items()):
    if k[0] == 2 and k[1] == "diloco" and k[2] == "none":
        DILOCO.update({s: v for s, (v, _, _) in by_seed.items()})
for k, by_seed in sorted(final.items()):
    cells, gaps = [], []
    for s in sorted(by_seed):
        v, st, wall = by_seed[s]
        ref = DILOCO.get(s) if k[0] == 2 else None
        gap = None if ref is None or (k[1] == "diloco" and k[2] == "none") else 100 * (v / ref - 1)
        if gap is not None:
            gaps.append(gap)
        cells.append(f"s{s} {v:.4f}" + ("" if gap is None else f" ({gap:+.1f} %)"))
    wire = [st.get("wire_bytes", 0) for _, st, _ in by_seed.values()]
    med = f" median {statistics.median(gaps):+.1f} %" if gaps else ""
    print(f"{k}: " + ", ".join(cells) + med + f"; wire {max(wire) / 1e6:.2f} MB")
