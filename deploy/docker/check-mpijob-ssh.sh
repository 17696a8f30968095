#!/usr/bin/env bash
# Inside the image, as its non-root user: the MPIJob path end to end on one machine. sshd runs
# from /home/lightcc/.sshd_config on port 2222 (as a worker pod does, here on 127.0.0.2 only),
# and lightccrun starts one rank locally and one "remote" rank over ssh, as the launcher does,
# with a hostfile in the operator's format; the two ranks allreduce across "hosts" (HARP on lo).
set -euo pipefail
work=$(mktemp -d)
ssh-keygen -q -t ed25519 -N "" -f "$HOME/.ssh/id_rsa"          # the operator mounts its own pair
cp "$HOME/.ssh/id_rsa.pub" "$HOME/.ssh/authorized_keys"
/usr/sbin/sshd -f "$HOME/.sshd_config" -o ListenAddress=127.0.0.2 -E "$work/sshd.log"
trap 'kill "$(cat "$HOME/sshd.pid")" 2>/dev/null || true; rm -f "$HOME"/.ssh/id_rsa* "$HOME/.ssh/authorized_keys"' EXIT
sleep 1
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n' > "$work/hostfile"
lightccrun -np 2 --hostfile "$work/hostfile" --ssh-port 2222 --rendezvous-addr 127.0.0.1 --network-interfaces lo \
    python -c "import numpy as np, lightcc as hvd; hvd.init()
print('rank', hvd.rank(), 'of', hvd.size(), 'local_size', hvd.local_size(),
      'sum', hvd.allreduce(np.ones(4) * (hvd.rank() + 1), op=hvd.Sum).tolist())
hvd.shutdown()"
grep -q "Accepted publickey for lightcc" "$work/sshd.log"
echo "ssh path OK: $(grep -c 'Accepted publickey' "$work/sshd.log") login(s) accepted by the non-root sshd"
