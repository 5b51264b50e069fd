#!/usr/bin/env bash
# ocibuild's test command: what a new user and CI run (see docs/testing.md).
#
#   ./scripts/test.sh [ARGS...]     ARGS go to `cargo test` (e.g. a test name filter)
#
# 1. Installs, only when missing, the Debian packages that the tests drive (podman, skopeo,
#    umoci, ...) with apt-get (through sudo when not root); as root, creates the user
#    ocibuild-rootless with /etc/subuid and /etc/subgid ranges (the rootless test stage's).
#    Also fetches Debian 13's skopeo and cosign (the signing tests') and builds ferro-oci-server
#    (the second registry) from the crates registry, both under target/.
#    OCIBUILD_NO_INSTALL=1 skips this.
# 2. Exports the settings the tests read (each can be overridden from the environment):
#      OCIBUILD_REQUIRE_TOOLS=1   a missing tool fails a test instead of skipping it
#      OCIBUILD_PODMAN_ARGS       flags for `podman run` that work in a sandboxed host
#      OCIBUILD_ONLINE            passed through; 1 enables tests that reach PyPI / Debian
# 3. Runs cargo fmt --check, cargo clippy (warnings are errors) and cargo test.
# It starts nothing long-lived: tests start their own registry / containers on 127.0.0.1.
set -euo pipefail

cd "$(dirname "$0")/.."

# Debian packages the test suite needs, by the command it uses from each.
PACKAGES=(
    podman          # podman run / load of built images
    runc            # OCI runtime for podman (crun rejects hybrid cgroup v1 hosts)
    conmon          # podman's container monitor (a dependency; named for clarity)
    uidmap          # newuidmap/newgidmap for podman when not root
    skopeo          # skopeo inspect / copy
    umoci           # umoci unpack / repack (0.4.7: gzip layers only)
    oci-image-tool  # oci-image-tool validate
    busybox-static  # a static /bin/busybox for hand-made test images; its httpd (Basic auth)
    docker-registry # CNCF Distribution 2.8: a local registry on 127.0.0.1
    qemu-user-static # qemu-aarch64-static: the arm64 image's python3 run in user mode (no binfmt)
    pigz            # parallel gzip, compared against our compressor
    zstd            # zstd command line tool
    gzip
    tar
    bsdutils        # script: a pseudo-terminal, for the progress display's tests
    openssl         # keys for the signing tests; DSSE signatures checked independently
    debian-archive-keyring # verifies the Debian 13 index the sigstore tools come from
    python3         # tarfile listings; the online tests' venvs (uv, spdx-tools)
    python3-venv    # `python3 -m venv` with pip on Debian/Ubuntu's python3
    ca-certificates # TLS to PyPI / Debian for the online tests
    chromium        # headless: the report page rendered, its numbers read from the DOM
)

log() { printf '==> %s\n' "$*" >&2; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        log "need root (or sudo) to run: $*"
        exit 1
    fi
}

install_missing_packages() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        log "Debian packages: all ${#PACKAGES[@]} present"
        return
    fi
    log "installing missing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}"
}

if [[ ${OCIBUILD_NO_INSTALL:-0} == 1 ]]; then
    log "OCIBUILD_NO_INSTALL=1: not installing Debian packages"
elif ! command -v apt-get >/dev/null; then
    log "no apt-get: install by hand: ${PACKAGES[*]}"
else
    install_missing_packages
fi

# The rootless test stage (tests/it/test_stage_rootless.rs) runs `ocibuild test` as a user who
# is not root: as root, create it once, with subordinate uid/gid ranges for rootless podman
# (useradd may add them itself; one range each, after any other user's, is added otherwise).
ROOTLESS_USER=ocibuild-rootless
setup_rootless_user() {
    if ! id -u "$ROOTLESS_USER" >/dev/null 2>&1; then
        log "creating the user $ROOTLESS_USER (for the rootless test stage)"
        useradd -m "$ROOTLESS_USER"
    fi
    local f start
    for f in /etc/subuid /etc/subgid; do
        touch "$f"
        if ! grep -q "^$ROOTLESS_USER:" "$f"; then
            start=$(awk -F: 'NF >= 3 && $2 + $3 > m { m = $2 + $3 } END { print (m > 100000 ? m : 100000) }' "$f")
            log "$f: $ROOTLESS_USER:$start:65536"
            echo "$ROOTLESS_USER:$start:65536" >>"$f"
        fi
    done
}
if [[ ${OCIBUILD_NO_INSTALL:-0} != 1 && $(id -u) -eq 0 ]] && command -v useradd >/dev/null; then
    setup_rootless_user
fi

# Debian 12's skopeo has sigstore signatures compiled out (a Debian patch: "Debian-local
# change: sigstore disabled"), so the signing tests check ocibuild's signatures with Debian 13's
# skopeo and cosign: downloaded from the Debian archive (the index verified by apt against
# debian-archive-keyring), unpacked, not installed, into target/sigstore-tools, and run with
# Debian 13's own libc through its loader. The archive is the one this machine's apt uses.
install_sigstore_tools() {
    local dir=target/sigstore-tools
    if [[ -x $dir/bin/skopeo-sigstore && -x $dir/bin/cosign ]] \
        && "$dir/bin/skopeo-sigstore" --version >/dev/null 2>&1 \
        && "$dir/bin/cosign" version >/dev/null 2>&1; then
        log "sigstore tools: present in $dir"
        return
    fi
    # The first active Debian archive entry, one-line (`deb URI suite …`) or deb822 (`URIs:`).
    local uri
    uri=$({
        grep -hE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
            2>/dev/null | sed -E 's/\[[^]]*\]//' | awk '{print $2}'
        grep -hE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | sed -E 's/^[[:space:]]*URIs:[[:space:]]*//' | tr ' ' '\n'
    } | grep -E '^https?://[^ ]*/debian/?$' | head -1 || true)
    rm -rf "$dir" && mkdir -p "$dir"/{lists/partial,cache/archives/partial,root,bin,debs}
    local abs
    abs=$(cd "$dir" && pwd)
    local apt_opts=(-o "Dir::Etc::sourcelist=$abs/sources.list" -o Dir::Etc::sourceparts=-
        -o "Dir::State::Lists=$abs/lists" -o "Dir::Cache=$abs/cache" -o APT::Sandbox::User=root)
    local pkgs=(skopeo cosign libc6 libgpgme11t64 libassuan9 libgpg-error0 libsqlite3-0)
    local candidate fetched=
    for candidate in ${uri:+"$uri"} http://deb.debian.org/debian; do
        log "sigstore tools: Debian 13 skopeo and cosign from $candidate"
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $candidate trixie main" \
            >"$abs/sources.list"
        if apt-get "${apt_opts[@]}" update -q >&2 \
            && (cd "$abs/debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]/%//trixie}" >&2); then
            fetched=1
            break
        fi
    done
    if [[ -z $fetched ]]; then
        log "sigstore tools: could not download Debian 13's skopeo and cosign; the tests that check signatures with them are SKIPPED"
        export OCIBUILD_SIGSTORE_TOOLS_MISSING=1
        return
    fi
    local deb
    for deb in "$abs"/debs/*.deb; do
        dpkg-deb -x "$deb" "$abs/root"
    done
    # Both run on Debian 13's libc, through its loader (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1).
    local lib loader tool
    lib=$(dirname "$(find "$abs/root/usr/lib" -maxdepth 2 -name 'libc.so.6' | head -1)")
    loader=$(find "$lib" -maxdepth 1 -name 'ld-linux*.so.*' | head -1)
    for tool in skopeo cosign; do
        printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s/root/usr/bin/%s" "$@"\n' \
            "$loader" "$lib" "$abs" "$tool" >"$abs/bin/$tool"
        chmod +x "$abs/bin/$tool"
    done
    mv "$abs/bin/skopeo" "$abs/bin/skopeo-sigstore"
    "$abs/bin/skopeo-sigstore" --version >&2
    "$abs/bin/cosign" version 2>&1 | grep -E '^GitVersion' >&2
}

if [[ ${OCIBUILD_NO_INSTALL:-0} != 1 ]] && command -v apt-get >/dev/null; then
    install_sigstore_tools
fi
# The second registry implementation (tests/it/two_registries.rs, tests/it/registry_real.rs):
# ferro-oci-server from the crates registry, built once into target/ferro (a debug build: the
# tests push a few MiB, and it compiles in half the time), at the version and with the
# dependency versions its own Cargo.lock pins.
FERRO_VERSION=1.0.0
install_ferro() {
    local dir=target/ferro
    if [[ -x $dir/bin/ferro-oci-server ]] && [[ $(cat "$dir/version" 2>/dev/null) == "$FERRO_VERSION" ]]; then
        log "ferro-oci-server $FERRO_VERSION: present in $dir"
        return
    fi
    log "ferro-oci-server $FERRO_VERSION: cargo install into $dir"
    cargo install --quiet --locked --debug --root "$dir" ferro-oci-server --version "$FERRO_VERSION" >&2
    echo "$FERRO_VERSION" >"$dir/version"
}
if [[ ${OCIBUILD_NO_INSTALL:-0} != 1 ]]; then
    install_ferro
fi
if [[ -d target/ferro/bin ]]; then
    PATH="$(cd target/ferro/bin && pwd):$PATH"
    export PATH
fi

if [[ -d target/sigstore-tools/bin ]]; then
    PATH="$(cd target/sigstore-tools/bin && pwd):$PATH"
    export PATH
fi

# Fail, don't skip, when a tool is missing: a green run must mean the readers really ran.
export OCIBUILD_REQUIRE_TOOLS="${OCIBUILD_REQUIRE_TOOLS:-1}"
# `podman run` flags for hosts without cgroup v2 delegation or CAP_SYS_RESOURCE (CI boxes,
# containers in VMs): runc (crun rejects hybrid cgroups), no network namespace setup, and
# rlimits at or below the usual hard limits (podman's defaults raise them: EPERM).
# Set OCIBUILD_PODMAN_ARGS (even to "") to replace them.
default_podman_args="--runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"
export OCIBUILD_PODMAN_ARGS="${OCIBUILD_PODMAN_ARGS-$default_podman_args}"
export OCIBUILD_ONLINE="${OCIBUILD_ONLINE:-0}"
log "OCIBUILD_REQUIRE_TOOLS=$OCIBUILD_REQUIRE_TOOLS OCIBUILD_ONLINE=$OCIBUILD_ONLINE"
log "OCIBUILD_PODMAN_ARGS=$OCIBUILD_PODMAN_ARGS"

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "cargo test"
cargo test --workspace --locked "$@"
