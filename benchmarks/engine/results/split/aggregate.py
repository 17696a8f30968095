import json, statistics as st, glob
def rows(f):
    return json.load(open(f))["rows"]
def table(kind, key, sizes=None):
    out = {}
    for tree in ("baseline", "main"):
        for f in sorted(glob.glob(f"results/split/{kind}-{tree}-*.json")):
            for r in rows(f):
                if sizes and r["size"] not in sizes: continue
                out.setdefault((r["size"], r["library"], tree), []).append(r[key])
    return out
sizes = [4096, 65536, 1 << 20, 16 << 20, 64 << 20, 256 << 20]
ar = table("ar", "busbw", sizes)
print("allreduce busbw GB/s, median [min-max] of 5 runs; x mpi = per-run ratio to OpenMPI in the same launch")
print("| size | baseline | new | new / baseline | OpenMPI | new x OpenMPI (median, runs >= 1) |")
for s in sizes:
    b = ar[(s, "lightcc", "baseline")]; n = ar[(s, "lightcc", "main")]
    m = ar[(s, "mpi", "main")] + ar[(s, "mpi", "baseline")]
    ratios = [x / y for x, y in zip(ar[(s, "lightcc", "main")], ar[(s, "mpi", "main")])]
    lab = f"{s//1024} KiB" if s < (1<<20) else f"{s>>20} MiB"
    print(f"| {lab} | {st.median(b):.2f} [{min(b):.2f}-{max(b):.2f}] | {st.median(n):.2f} [{min(n):.2f}-{max(n):.2f}] | {st.median(n)/st.median(b):.2f} | {st.median(m):.2f} | {st.median(ratios):.2f} ({sum(r >= 1 for r in ratios)}/5) [{min(ratios):.2f}-{max(ratios):.2f}] |")
lat = table("lat", "time_us")
for k, v in sorted(lat.items()):
    print("latency", k, [round(x, 2) for x in v], "median", round(st.median(v), 2))
neg = table("neg", "time_us")
for k, v in sorted(neg.items()):
    print("negotiation step", k, [round(x) for x in v], "median", round(st.median(v)))
