#!/usr/bin/env bash
# Builds Kite's container image, one OCI image for every component (`kite`
# and its subcommands), without a container daemon, and writes it as an OCI
# archive that `k3s ctr images import` and K3s' air-gap images folder take.
#
#   scripts/build-image.sh [--out DIR] [--binary PATH]
#
# The image holds the production build of `kite` (no `demo` feature, so no
# kite-testkit), the shared libraries it links, exactly as the build machine
# has them, and /etc/passwd and /etc/group naming the user it runs as
# (65532, `nonroot`). There is no shell and no package manager. Why a
# dynamic binary with its libraries, and not a static one: Rust's musl target
# cannot be installed from the package registries this project builds with,
# and a static glibc binary cannot resolve host names without the NSS
# libraries, which the gateway needs to reach `<service>.<namespace>.svc`.
#
# Reproducible: the same commit and binary give the same image digest. File
# times, the image's creation time and history come from SOURCE_DATE_EPOCH
# (by default the commit's time), and files are added in a fixed order.
#
# It prints the archive's path and the image's digest; pin the deployment to
# it with `kite manifests --image localhost/kite@<digest>`.
#
# Tools: umoci and skopeo (Debian's packages, installed when missing and run
# as root), cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

out="target/image"
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        --binary) binary="$2"; shift 2 ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "build-image.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

missing=()
command -v umoci >/dev/null 2>&1 || missing+=(umoci)
command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing ${missing[*]} to assemble the image" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    else
        echo "build-image.sh: ${missing[*]} missing: install them (Debian: apt-get install umoci skopeo)" >&2
        exit 1
    fi
fi

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
created="$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ)"
reference="localhost/kite:${version}"

if [ -z "$binary" ]; then
    echo "building kite (release, no demo feature)" >&2
    cargo build --locked --release -p kite-bin --no-default-features >&2
    binary="${CARGO_TARGET_DIR:-target}/release/kite"
fi
[ -x "$binary" ] || { echo "build-image.sh: no kite binary at $binary" >&2; exit 1; }
# A production build answers any `kite demo ...` with "has no demo"; a demo build refuses the unknown flag.
answer="$("$binary" demo --not-a-flag 2>&1 || true)"
if ! grep -q "has no demo" <<< "$answer"; then
    echo "build-image.sh: $binary has the demo feature; the image takes the production build (--no-default-features)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
mkdir -p "$rootfs/etc" "$rootfs/home/nonroot"
install -m 0755 "$binary" "$rootfs/kite"
# The loader and every library the binary links, as real files at their paths.
for library in $(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u); do
    mkdir -p "$rootfs$(dirname "$library")"
    cp -L "$library" "$rootfs$library"
    chmod 0755 "$rootfs$library"
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$rootfs/etc/group"
printf 'hosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
chown 65532:65532 "$rootfs/home/nonroot"
find "$rootfs" -type d -exec chmod 0755 {} +
chmod 0700 "$rootfs/home/nonroot"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/nsswitch.conf"
find "$rootfs" -exec touch -h -d "@${SOURCE_DATE_EPOCH}" {} +

layout="$work/oci"
umoci init --layout "$layout"
umoci new --image "$layout:kite"
history=(--history.created "$created" --history.author "Kite" --history.created_by "scripts/build-image.sh")
umoci insert "${history[@]}" --history.comment "kite ${version}, its libraries, /etc/passwd" --image "$layout:kite" "$rootfs" /
annotations=(
    "org.opencontainers.image.source=https://github.com/hy3ons/kite"
    "org.opencontainers.image.revision=${revision}"
    "org.opencontainers.image.version=${version}"
    "org.opencontainers.image.created=${created}"
    "org.opencontainers.image.licenses=Apache-2.0"
    "org.opencontainers.image.title=kite"
    "org.opencontainers.image.description=Kite: self-service virtual machines on Kubernetes, reached over SSH (controller, API and web UI, SSH gateway)"
)
config=("${history[@]}" --history.comment "the user, entrypoint and annotations" --image "$layout:kite" --created "$created" --os linux --architecture "$(dpkg --print-architecture)"
    --config.user 65532:65532 --config.entrypoint /kite --config.workingdir /home/nonroot
    --config.env PATH=/ --config.env HOME=/home/nonroot)
for annotation in "${annotations[@]}"; do
    config+=(--manifest.annotation "$annotation" --config.label "$annotation")
done
umoci config "${config[@]}"
umoci gc --layout "$layout"

mkdir -p "$out"
archive="$out/kite-${version}.oci.tar"
rm -f "$archive"
skopeo copy --quiet "oci:${layout}:kite" "oci-archive:${archive}:${reference}"
digest="$(skopeo inspect --format '{{.Digest}}' "oci-archive:${archive}")"
echo "image:   ${reference}"
echo "archive: ${archive}"
echo "digest:  ${digest}"
