#!/usr/bin/env bash
# Measures what loading the example pack costs a release host: every pre-dlopen check
# (ownership/permissions of file and ancestors, manifest, ELF layout, sha256 of the whole
# file), dlopen, abi_stable's version/layout check, describe and init. Reports the .so size
# and the wall time of `list plugin` with and without the pack, over N runs each.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-200}"
cargo build --release -p agentcompass-host -p example-pack >/dev/null 2>&1
target="${CARGO_TARGET_DIR:-target}/release"
host="$target/agentcompass-host"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
"$host" plugin package "$target/libexample_pack.so" --out "$dir/plugins" >/dev/null

time_runs() { # prints mean microseconds per run of "$@"
    local start end
    start=$(date +%s%N)
    for _ in $(seq "$N"); do "$@" >/dev/null; done
    end=$(date +%s%N)
    echo $(( (end - start) / N / 1000 ))
}

size=$(stat -c %s "$dir/plugins/example-pack.so")
base=$(time_runs "$host" --no-bundled-plugins list plugin)
with=$(time_runs "$host" --no-bundled-plugins --plugin-dir "$dir/plugins" list plugin)
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d)"
echo "example-pack.so (release): $size bytes ($((size / 1024)) KiB)"
echo "host start, no plugins:    ${base} us/run (mean of $N)"
echo "host start + example pack: ${with} us/run (mean of $N)"
echo "example pack load cost:    $((with - base)) us (checks + sha256 + dlopen + abi check + describe + init)"
