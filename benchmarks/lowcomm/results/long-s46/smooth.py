"""Per run: bits/byte at step 2000 and the mean of the evaluations at steps 1600-2000 (five), DiLoCo's on the same
seed beside (session 45's race runs, this CPU), so a gap is read at one eval point and over the run's last fifth."""
import json, sys
REF = "/work/results/s45/race-100m.jsonl", "/work/results/s45/race-100m-wait.jsonl"


def runs(path):
    for line in open(path):
        line = line.strip()
        if line.startswith("RESULT "):
            line = line[7:]
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "curve" in d and d["curve"]:
            yield d


def ends(d):
    at = {c["step"]: c["val_bpb"] for c in d["curve"]}
    return at.get(2000), sum(at[s] for s in (1600, 1700, 1800, 1900, 2000)) / 5


ref = {}
for p in REF:
    for d in runs(p):
        a = d["args"]
        if a["method"] == "diloco" and a["fragments"] == "1":
            ref[("diloco", int(a["seed"]))] = ends(d)
        if a["method"] == "ddp":
            ref[("ddp", int(a["seed"]))] = ends(d)
for p in sys.argv[1:]:
    for d in runs(p):
        a = d["args"]
        seed = int(a["seed"])
        if a["method"] == "ddp":
            ref[("ddp", seed)] = ends(d)
        last, mean = ends(d)
        base = ref.get(("diloco", seed))
        gap = f"{100 * (last / base[0] - 1):+.1f} % / {100 * (mean / base[1] - 1):+.1f} %" if base else ""
        print(f"{a['method']:>6} H {a['sync_every']:>3} {a['compression']:>15} lr {a['outer_lr']:>4} m "
              f"{a['outer_momentum']:>3} seed {seed}: {last:.4f} / last-five {mean:.4f}  vs DiLoCo {gap}")
for k, v in sorted(ref.items()):
    print("reference", k, f"{v[0]:.4f} / last-five {v[1]:.4f}")
