#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration and doc tests.
# This is the README's test command, and .ci/run calls it as it is.
#
# The tests drive real peers: the OpenSSH client and sshd, headless
# Chromium with chromedriver for the web UI, and `unshare` and `ip` for the
# test that runs in a network namespace of its own (all installed here when
# missing, from Debian's packages), moto's S3 server for the S3 audit
# store's tests (installed here when missing, from PyPI), and kubectl (on
# the machine). A test whose tool is missing fails and says so; it never
# passes silently.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
# The deployment test runs in a network namespace of its own (unshare, ip).
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
# The S3 store's tests run moto's S3 server, from PyPI, with Python 3.
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing ${missing[*]} for the SSH, browser and S3 store tests"
        # Installing openssh-server must not start an sshd on the host's port 22:
        # Kite never touches the host's sshd. policy-rc.d stops the package from starting it.
        created_policy=""
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
            chmod +x /usr/sbin/policy-rc.d
            created_policy=yes
        fi
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
        [ -n "$created_policy" ] && rm -f /usr/sbin/policy-rc.d
    else
        echo "warning: ${missing[*]} missing and cannot be installed here; the SSH and browser tests will fail and say so" >&2
    fi
fi
if ! python3 -c 'import moto.server, flask' >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v python3 >/dev/null 2>&1; then
        echo "installing moto[server] from PyPI for the S3 store's tests"
        # Debian's own Python refuses pip's installs unless told (PEP 668).
        PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check 'moto[server]>=5,<6'
    else
        echo "warning: moto[server] missing and cannot be installed here; the S3 store's tests will fail and say so" >&2
    fi
fi

# kite-russh (vendor/kite-russh, Kite's fork of russh) is a member but upstream's
# code; Kite's tests of it are kite-ssh's (flow_control, memory).
cargo test --locked --workspace --exclude kite-russh --all-targets
cargo test --locked --workspace --exclude kite-russh --doc
