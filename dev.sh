#!/usr/bin/env bash
# Developer entry point: `./dev.sh demo` and `./dev.sh test` (see README.md).
set -euo pipefail
cd "$(dirname "$0")"

profile_dir() { echo "${CARGO_TARGET_DIR:-target}/$1"; }

# Installs the Debian packages the tests need when their command is missing.
ensure_tools() {
    local missing=()
    command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing ${missing[*]} (Debian packages)" >&2
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
            { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y "${missing[@]}" >/dev/null; }
    fi
}

# Packages the first-party plugins into <install dir>/plugins, where the host loads them from.
bundle_plugins() {
    local dir
    dir="$(profile_dir "$1")"
    "$dir/agentcompass-host" plugin package \
        "$dir/libexample_pack.so" "$dir/libexample_recipe.so" \
        --out "$dir/plugins" >/dev/null
}

case "${1:-}" in
demo)
    cargo build --release --workspace
    bundle_plugins release
    host="$(profile_dir release)/agentcompass-host"
    "$host" list plugin
    echo
    "$host" list benchmark
    echo
    "$host" config docs benchmark example_exact_match
    echo
    run_dir=$("$host" run example_exact_match example_calculator demo-model \
        --benchmark-params '{"size": 50}' --harness-params '{"wrong_every": 10}' \
        --results-dir "${TMPDIR:-/tmp}/agentcompass-demo")
    cat "$run_dir/summary.md"
    ;;
test)
    ensure_tools
    cargo build --workspace
    bundle_plugins debug
    # Snapshots are reviewed, never written, by the test command.
    INSTA_UPDATE="${INSTA_UPDATE:-no}" cargo test --workspace
    ;;
*)
    echo "usage: ./dev.sh demo|test" >&2
    exit 2
    ;;
esac
