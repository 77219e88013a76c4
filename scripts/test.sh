#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration and doc tests.
# This is the README's test command, and .ci/run calls it as it is.
# It installs what the tests need when it is missing; today that is only the
# Rust toolchain's own tools, which the machine has.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --locked --workspace --all-targets
cargo test --locked --workspace --doc
