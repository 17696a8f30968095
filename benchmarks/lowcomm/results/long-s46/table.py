"""Step-2000 bits/byte and wire bytes of session 46's runs beside DiLoCo's on the same seeds (session 45, this CPU)."""
import json, sys
diloco = {0: 1.8431859234693229, 1: 1.8173092418378538, 2: 1.885643323483487}
for f in sys.argv[1:]:
    for line in open(f):
        line = line.strip()
        if line.startswith("RESULT "):
            line = line[7:]
        try:
            d = json.loads(line)
        except ValueError:
            continue
        a, s = d["args"], d.get("stats") or {}
        seed = int(a["seed"])
        v = [c["val_bpb"] for c in d["curve"] if c["step"] == 2000][0]
        print(f"{a['method']:>6} H {a['sync_every']:>3} {a['compression']:>16} lr {a['outer_lr']} m {a['outer_momentum']} seed {seed}: {v:.4f} "
              f"({100 * (v / diloco[seed] - 1):+.1f} % vs DiLoCo) wire {s.get('wire_bytes', 0) / 1e6:.2f} MB "
              f"({s.get('dense_bytes', 0) / max(s.get('wire_bytes', 0), 1):.2f}x fewer) wait {s.get('wait_s', 0):.1f} s train {d['train_s']:.0f} s")
