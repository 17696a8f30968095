"""Streaming's wait against plain DiLoCo's per seed, from race rows (`python waits.py FILE...`; DDP and local rows have no wait)."""
import json
import sys

rows = [json.loads(line) for f in sys.argv[1:] for line in open(f)]
rows = [r for r in rows if "wait_s" in (r.get("stats") or {})]
base = {r["args"]["seed"]: r["stats"]["wait_s"] for r in rows if str(r["args"].get("fragments")) == "1"}
for r in rows:
    a, w = r["args"], r["stats"]["wait_s"]
    print(f"seed {a['seed']} fragments {a.get('fragments')} delay {a.get('delay')}: wait {w:.1f} s, "
          f"{w / base[a['seed']]:.2f} of DiLoCo's, {r['final_val_bpb']:.3f} bits/byte, {r['train_s']:.0f} s")
