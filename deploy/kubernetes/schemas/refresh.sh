#!/usr/bin/env bash
# Re-vendors the upstream CRDs that deploy/kubernetes/validate.py checks manifests against.
#
#   deploy/kubernetes/schemas/refresh.sh TRAINER_GIT MPI_OPERATOR_GIT [TRAINER_TAG] [MPI_TAG] [V1_TAG]
#
# TRAINER_GIT and MPI_OPERATOR_GIT are clones (or bare mirrors) of github.com/kubeflow/trainer and
# github.com/kubeflow/mpi-operator. Files are copied byte for byte from the tagged releases, with
# each project's LICENSE (Apache-2.0) beside them; update the tags here and in README.md together.
set -euo pipefail
TRAINER=$1 MPI=$2
TRAINER_TAG=${3:-v2.3.0} MPI_TAG=${4:-v0.8.0} V1_TAG=${5:-v1.9.4}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

vendor() {  # repo tag dir path...
  local repo=$1 tag=$2 dir=$3
  shift 3
  rm -rf "${HERE:?}/$dir" && mkdir -p "$HERE/$dir"
  git -C "$repo" show "$tag:LICENSE" > "$HERE/$dir/LICENSE"
  for path in "$@"; do
    git -C "$repo" show "$tag:$path" > "$HERE/$dir/$(basename "$path")"
  done
  echo "$tag $(git -C "$repo" rev-parse "$tag^{commit}")" > "$HERE/$dir/SOURCE"
}

vendor "$TRAINER" "$TRAINER_TAG" "trainer-$TRAINER_TAG" \
  manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml \
  manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml
vendor "$MPI" "$MPI_TAG" "mpi-operator-$MPI_TAG" manifests/base/kubeflow.org_mpijobs.yaml
# MPIJob kubeflow.org/v1 was served by the training-operator, the trainer repository's v1 line.
vendor "$TRAINER" "$V1_TAG" "training-operator-$V1_TAG" manifests/base/crds/kubeflow.org_mpijobs.yaml
