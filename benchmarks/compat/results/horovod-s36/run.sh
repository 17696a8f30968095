#!/bin/bash
# Horovod 0.28.1's own suites against lightcc at 2 ranks (session 36), as session 25 ran them.
cd /work/main
OUT=/work/results/s36/horovod
git log --oneline -1 > $OUT/commit.txt
for spec in "test_tensorflow.py tf-keras" "test_tensorflow.py keras3" "test_tensorflow2_keras.py tf-keras" "test_tensorflow_process_sets.py keras3" "test_process_sets_static.py keras3" "test_timeline.py keras3"; do
  set -- $spec
  echo "== $1 $2 $(date +%T)"
  timeout 1500 python -m benchmarks.compat.horovod_suite $1 --keras $2 --json $OUT/${1%.py}-$2.json 2>&1 | tail -4
done
echo "== done $(date +%T)"
