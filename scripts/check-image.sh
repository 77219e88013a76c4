#!/usr/bin/env bash
# Checks Kite's image as `.ci/run` does: built twice from the same binary it
# has the same digest; `skopeo inspect` shows the OCI annotations, the user
# 65532 and the entrypoint /kite; unpacked, it has no shell, and `kite` runs
# in it as user 65532 with nothing but the image's own files (chroot); and
# containerd, which K3s embeds, imports the archive as `k3s ctr images
# import` does (a private containerd on a socket in a temporary directory,
# no network) and runs it with runc.
#
#   scripts/check-image.sh BINARY
#
# BINARY is a production build of kite (`cargo build -p kite-bin
# --no-default-features`); CI uses the debug one it has already built.
# Runs as root (chroot, containerd); needs umoci and skopeo (build-image.sh
# installs them) and containerd (installed here when missing, from Debian).
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:?usage: scripts/check-image.sh BINARY}"
[ "$(id -u)" -eq 0 ] || { echo "check-image.sh: run as root (it unpacks the image and runs kite in a chroot)" >&2; exit 1; }

work="$(mktemp -d)"
containerd_pid=""
clean_up() {
    if [ -n "$containerd_pid" ]; then
        kill "$containerd_pid" 2> /dev/null || true
        wait "$containerd_pid" 2> /dev/null || true
    fi
    # Whatever containerd left mounted under its root goes before the directory.
    grep -o " $work/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2> /dev/null || true
    rm -rf "$work"
}
trap clean_up EXIT
fail() { echo "check-image.sh: $*" >&2; exit 1; }

bash scripts/build-image.sh --binary "$binary" --out "$work/first" > "$work/first.txt"
bash scripts/build-image.sh --binary "$binary" --out "$work/second" > "$work/second.txt"
digest() { sed -n 's/^digest: *//p' "$1"; }
archive="$(sed -n 's/^archive: *//p' "$work/first.txt")"
[ -n "$(digest "$work/first.txt")" ] || fail "build-image.sh printed no digest: $(cat "$work/first.txt")"
[ "$(digest "$work/first.txt")" = "$(digest "$work/second.txt")" ] \
    || fail "two builds of one binary gave two digests: $(digest "$work/first.txt") and $(digest "$work/second.txt")"
echo "the same digest twice: $(digest "$work/first.txt")"

skopeo inspect --raw "oci-archive:$archive" > "$work/manifest.json"
skopeo inspect --config "oci-archive:$archive" > "$work/config.json"
python3 - "$work/manifest.json" "$work/config.json" "$(git rev-parse HEAD)" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
config = json.load(open(sys.argv[2]))
revision = sys.argv[3]
annotations = manifest.get("annotations", {})
for key in ["source", "revision", "version", "created", "licenses", "title", "description"]:
    name = f"org.opencontainers.image.{key}"
    assert annotations.get(name), f"the manifest has no {name}: {annotations}"
    assert config["config"]["Labels"].get(name) == annotations[name], f"the label {name} differs from the annotation"
assert annotations["org.opencontainers.image.revision"] == revision, annotations
assert config["config"]["User"] == "65532:65532", config["config"]
assert config["config"]["Entrypoint"] == ["/kite"], config["config"]
assert len(manifest["layers"]) == 1 and len(config["history"]) >= 1, (manifest, config["history"])
print("annotations, user 65532:65532 and entrypoint /kite as expected")
PY

skopeo copy --quiet "oci-archive:$archive" "oci:$work/layout:kite"
umoci unpack --image "$work/layout:kite" "$work/bundle" > /dev/null
rootfs="$work/bundle/rootfs"
for shell in bin/sh bin/bash usr/bin/sh bin/busybox; do
    [ ! -e "$rootfs/$shell" ] || fail "the image has a shell: /$shell"
done
version="$(chroot --userspec=65532:65532 "$rootfs" /kite --version)" || fail "kite does not run in the image"
[ "$version" = "kite $(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)" ] || fail "kite --version said $version"
manifests="$(chroot --userspec=65532:65532 "$rootfs" /kite manifests)" || fail "kite manifests failed in the image"
grep -q "^kind: Deployment" <<< "$manifests" || fail "kite manifests printed no Deployment in the image"
answer="$(chroot --userspec=65532:65532 "$rootfs" /kite demo 2>&1 || true)"
grep -q "has no demo" <<< "$answer" || fail "the image's kite has a demo: $answer"
echo "in the image, as user 65532 and with only its files: $version; no shell; no demo"

if ! command -v containerd > /dev/null 2>&1 || ! [ -x /usr/bin/ctr ]; then
    echo "installing containerd, to import and run the image as K3s would" >&2
    apt-get update -qq
    # policy-rc.d keeps the package from starting the system's containerd.
    created_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        created_policy=yes
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends containerd >&2
    [ -n "$created_policy" ] && rm -f /usr/sbin/policy-rc.d
fi
socket="$work/containerd/containerd.sock"
mkdir -p "$work/containerd"
cat > "$work/containerd/config.toml" <<TOML
version = 2
root = "$work/containerd/root"
state = "$work/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$socket"
TOML
containerd --config "$work/containerd/config.toml" > "$work/containerd/log" 2>&1 &
containerd_pid=$!
for _ in $(seq 1 100); do
    [ -S "$socket" ] && break
    sleep 0.1
done
[ -S "$socket" ] || fail "containerd did not start: $(tail -5 "$work/containerd/log")"
ctr() { timeout 120 /usr/bin/ctr --address "$socket" --namespace k8s.io "$@"; }
ctr images import "$archive" > /dev/null || fail "containerd did not import $archive"
listed="$(ctr images ls -q)"
[ "$listed" = "localhost/kite:$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)" ] || fail "containerd named the image: $listed"
imported="$(ctr images ls | awk 'NR == 2 {print $3}')"
[ "$imported" = "$(digest "$work/first.txt")" ] || fail "containerd holds digest $imported, not $(digest "$work/first.txt")"
ran="$(ctr run --rm "$listed" kite-image-check /kite --version)" || fail "containerd could not run the image"
[ "$ran" = "$version" ] || fail "kite --version under containerd said $ran"
ctr images rm "$listed" > /dev/null
echo "containerd imported $listed ($imported) and ran it: $ran"
