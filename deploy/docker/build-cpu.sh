#!/usr/bin/env bash
# Builds the CPU image from scratch with podman, with no registry but Debian's mirror and PyPI:
#   1. debootstrap a Debian 12 (bookworm) minbase and import it as the base image;
#   2. lay out a build context: the source tree (tracked + untracked, not ignored) and a
#      wheelhouse of the pinned Python packages (torch==2.13.0 comes from the local find-links);
#   3. podman build deploy/docker/Dockerfile.cpu;
#   4. run `lightccrun --check-build`, the README's main job, and the launcher command of
#      deploy/kubernetes/examples/horovod-pytorch-mpijob.yaml (mpirun, 2 ranks) inside the image.
# Usage: sudo deploy/docker/build-cpu.sh [IMAGE_TAG]      (default lightcc:cpu)
# Env:   WORK (scratch dir, default /var/tmp/lightcc-image), LIGHTCC_BUILD_JOBS (default 1),
#        SKIP_RUN=1 to stop after the build, FRESH=1 to start from nothing (a new debootstrap
#        base and no cached layers).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TAG="${1:-lightcc:cpu}"
WORK="${WORK:-/var/tmp/lightcc-image}"
BASE="localhost/lightcc-debian-base:bookworm"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
JOBS="${LIGHTCC_BUILD_JOBS:-1}"
# RUN steps run under chroot isolation: it needs no OCI runtime, so the build also works inside a
# sandbox where crun/runc cannot set cgroups or rlimits (ISOLATION=oci for a normal host).
ISOLATION="${ISOLATION:-chroot}"
mkdir -p "$WORK"
CACHE=()
if [ "${FRESH:-0}" = 1 ]; then
    podman rmi -f "$TAG" "$BASE" >/dev/null 2>&1 || true
    CACHE=(--no-cache)
fi
step() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

if ! podman image exists "$BASE"; then
    step "debootstrap bookworm into $WORK/rootfs"
    rm -rf "$WORK/rootfs"
    debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR"
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
        "$MIRROR" "$MIRROR" > "$WORK/rootfs/etc/apt/sources.list"
    rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
    step "import the base image $BASE"
    tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE"
fi

step "build context in $WORK/context"
rm -rf "$WORK/context"
mkdir -p "$WORK/context/src" "$WORK/context/wheels"
git -C "$ROOT" ls-files -z --cached --others --exclude-standard \
    | tar -C "$ROOT" -c --null --no-recursion --ignore-failed-read -T - -f - \
    | tar -x -C "$WORK/context/src"
step "wheelhouse (pinned; torch from the local find-links)"
python3 -m pip download --quiet --dest "$WORK/context/wheels" \
    -r "$ROOT/deploy/docker/requirements-build.txt" -r "$ROOT/deploy/docker/requirements-cpu.txt"
ls "$WORK/context/wheels"

step "podman build $TAG"
podman build "${CACHE[@]}" --format docker --isolation "$ISOLATION" --network host --build-arg "BASE_IMAGE=$BASE" \
    --build-arg "LIGHTCC_BUILD_JOBS=$JOBS" -f "$ROOT/deploy/docker/Dockerfile.cpu" -t "$TAG" "$WORK/context"
podman image ls "$TAG"
[ "${SKIP_RUN:-0}" = 1 ] && exit 0

# in_image CMD...: runs CMD in a container of the image (as its non-root USER, in its WORKDIR):
# `podman run` where an OCI runtime works, else buildah's chroot runner on a working container.
in_image() {
    if podman run --rm --network none --shm-size 1g "$TAG" true >/dev/null 2>&1; then
        podman run --rm --network none --shm-size 1g "$TAG" "$@"
    else
        echo "(podman run cannot start a container here; running through buildah run --isolation chroot)"
        local ctr status=0
        ctr=$(buildah from "$TAG")
        buildah run --isolation chroot --user 1000:1000 --workingdir /opt/lightcc "$ctr" -- "$@" || status=$?
        buildah rm "$ctr" >/dev/null
        return $status
    fi
}
step "health command inside the image"
in_image lightccrun --check-build
in_image horovodrun --version
step "the README's main job at 2 ranks inside the image"
in_image lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model resnet50 --batch-size 16 --num-iters 3
step "the Horovod MPIJob example's launcher command inside the image (mpirun, 2 ranks)"
in_image mpirun -np 2 --allow-run-as-root -bind-to none -map-by slot -x LD_LIBRARY_PATH -x PATH \
    -mca pml ob1 -mca btl ^openib python /opt/lightcc/examples/pytorch/pytorch_digits.py
step "done"
