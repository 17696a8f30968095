"""Per run of session 31's 4-host race files: bits/byte at steps 300 and 600, engine bytes, wait, training s."""
import glob, json, statistics
rows = {}
for f in sorted(glob.glob("/work/results/s31/lowcomm/race4-*.jsonl")):
    for line in open(f):
        r = json.loads(line)
        label = r["race"]["label"]
        at = {p["step"]: p["val_bpb"] for p in r["curve"]}
        st = r.get("stats", {})
        rows.setdefault(label, []).append((int(r["args"]["seed"]), at.get(300), at.get(600), st.get("engine_bytes_sent"),
                                           st.get("wait_s"), r["train_s"], max(r["race"]["tx_bytes"])))
for label, rs in rows.items():
    for seed, b300, b600, eb, w, t, tx in sorted(rs):
        print(f"{label:22s} seed {seed}: 300 {b300:.3f}  600 {b600 if b600 is None else round(b600,3)}  engine {eb}  wait {w if w is None else round(w,1)}  train {t:.0f}s  tx max {tx/1e6:.1f} MB")
