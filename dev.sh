#!/usr/bin/env bash
# Developer entry point: `./dev.sh demo` and `./dev.sh test` (see README.md).
set -euo pipefail
cd "$(dirname "$0")"

profile_dir() { echo "${CARGO_TARGET_DIR:-target}/$1"; }

# Installs the Debian packages the tests need when their command is missing.
ensure_tools() {
    local missing=()
    command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
    command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
    command -v busybox >/dev/null 2>&1 || missing+=(busybox-static)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing ${missing[*]} (Debian packages)" >&2
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
            { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y "${missing[@]}" >/dev/null; }
    fi
}

# Harbor 0.25.0 in a cached venv: the oracle of plugins/harbor's differential test
# (tests/harbor_oracle/oracle.py). Made with Python 3.12 (pyenv's, else python3.12 on PATH)
# when missing or broken; exports AGENTCOMPASS_HARBOR_PYTHON for the test.
ensure_harbor_oracle() {
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/harbor-0.25.0"
    local check='import sys, harbor; sys.exit(harbor.__version__ != "0.25.0")'
    if ! "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
        local python="" root candidate
        root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
        for candidate in "$root"/versions/3.12.*/bin/python3.12; do
            [ -x "$candidate" ] && python="$candidate"
        done
        [ -n "$python" ] || python="$(command -v python3.12 || true)"
        if [ -z "$python" ]; then
            echo "the Harbor differential test needs Python 3.12 (pyenv install 3.12)" >&2
            exit 1
        fi
        echo "installing harbor==0.25.0 into $venv (oracle of the Harbor differential test)" >&2
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet "harbor==0.25.0" >&2
        "$venv/bin/python" -c "$check"
    fi
    export AGENTCOMPASS_HARBOR_PYTHON="$venv/bin/python"
}

# The official model SDKs (openai 3.57.0, anthropic 2.15.0) in a cached venv: the clients of
# the scripted model server's streaming differential test (tests/scripted_sdk/clients.py). Made
# like the Harbor oracle's venv; exports AGENTCOMPASS_MODEL_SDK_PYTHON for the test.
ensure_model_sdks() {
    local openai="3.57.0" anthropic="2.15.0"
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/model-sdks-openai-$openai-anthropic-$anthropic"
    local check="import sys, openai, anthropic; sys.exit((openai.__version__, anthropic.__version__) != (\"$openai\", \"$anthropic\"))"
    if ! "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
        local python="" root candidate
        root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
        for candidate in "$root"/versions/3.12.*/bin/python3.12; do
            [ -x "$candidate" ] && python="$candidate"
        done
        [ -n "$python" ] || python="$(command -v python3.12 || true)"
        if [ -z "$python" ]; then
            echo "the model SDK differential test needs Python 3.12 (pyenv install 3.12)" >&2
            exit 1
        fi
        echo "installing openai==$openai anthropic==$anthropic into $venv (clients of the scripted model server test)" >&2
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet "openai==$openai" "anthropic==$anthropic" >&2
        "$venv/bin/python" -c "$check"
    fi
    export AGENTCOMPASS_MODEL_SDK_PYTHON="$venv/bin/python"
}

# Packages the first-party plugins into <install dir>/plugins, where the host loads them from.
bundle_plugins() {
    local dir
    dir="$(profile_dir "$1")"
    "$dir/agentcompass-host" plugin package \
        "$dir/libexample_pack.so" "$dir/libexample_recipe.so" "$dir/libdocker_provider.so" \
        "$dir/libqa_pack.so" "$dir/libharbor_pack.so" "$dir/libagents_pack.so" \
        --out "$dir/plugins" >/dev/null
}

# A private Docker daemon for the tests: own socket, data root and exec root under a temp
# dir, no bridge, no iptables (containers use only `none` or `host` networking). Stopped on
# exit. The test image is imported from a busybox root filesystem assembled here (no registry).
DOCKER_DIR=""
DOCKERD_PID=""
stop_docker() {
    if [ -n "$DOCKERD_PID" ]; then
        kill "$DOCKERD_PID" 2>/dev/null || true
        wait "$DOCKERD_PID" 2>/dev/null || true
    fi
    if [ -n "$DOCKER_DIR" ]; then
        # dockerd leaves its default network namespace mounted under the exec root.
        umount "$DOCKER_DIR/exec/netns/default" 2>/dev/null || true
        rm -rf "$DOCKER_DIR" 2>/dev/null || true
    fi
}
start_docker() {
    DOCKER_DIR="$(mktemp -d /tmp/agentcompass-docker.XXXXXX)"
    mkdir -p "$DOCKER_DIR/data" "$DOCKER_DIR/exec"
    trap stop_docker EXIT
    dockerd --host "unix://$DOCKER_DIR/docker.sock" --data-root "$DOCKER_DIR/data" \
        --exec-root "$DOCKER_DIR/exec" --pidfile "$DOCKER_DIR/docker.pid" \
        --bridge=none --iptables=false --ip6tables=false >"$DOCKER_DIR/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    export DOCKER_HOST="unix://$DOCKER_DIR/docker.sock"
    for _ in $(seq 100); do
        docker info >/dev/null 2>&1 && break
        sleep 0.2
    done
    docker info >/dev/null 2>&1 || { cat "$DOCKER_DIR/dockerd.log" >&2; echo "dockerd did not start" >&2; exit 1; }
    local rootfs="$DOCKER_DIR/rootfs"
    mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc" "$rootfs/app"
    cp "$(command -v busybox)" "$rootfs/bin/busybox"
    for tool in sh ls cat echo sleep true false mkdir rm cp mv env id nc wget ps kill test chmod stat head tail wc sed grep printf; do
        ln -sf busybox "$rootfs/bin/$tool"
    done
    tar -C "$rootfs" -c . | docker import - agentcompass-test/busybox:1 >/dev/null
    export AGENTCOMPASS_TEST_DOCKER_HOST="$DOCKER_HOST"
}

case "${1:-}" in
demo)
    # The sandbox environment needs bubblewrap; nothing else (no Docker, no network, no key).
    if ! command -v bwrap >/dev/null 2>&1; then
        echo "installing bubblewrap (Debian package; the sandbox environment uses it)" >&2
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get install -y bubblewrap >/dev/null 2>&1 ||
            { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y bubblewrap >/dev/null; } ||
            { echo "bubblewrap is missing and could not be installed: apt-get install bubblewrap" >&2; exit 1; }
    fi
    cargo build --release --workspace
    bundle_plugins release
    bin="$(profile_dir release)"
    host="$bin/agentcompass-host"
    results="${TMPDIR:-/tmp}/agentcompass-demo"
    echo
    echo "== 1. oracle: the reference solutions of the bundled Harbor tasks, in the sandbox"
    "$host" run harbor oracle reference --benchmark-params '{"path": "examples/harbor"}' \
        --env sandbox --results-dir "$results" >/dev/null
    echo
    echo "== 2. terminus: an agent loop (bash tool) against a scripted OpenAI-compatible model on loopback"
    workdir="$(mktemp -d)"
    "$bin/scripted-llm" --script examples/demo/terminus-script.json --port-file "$workdir/port" \
        --log "$workdir/requests.jsonl" >/dev/null &
    server=$!
    trap 'kill "$server" 2>/dev/null || true; rm -rf "$workdir"' EXIT
    for _ in $(seq 50); do [ -s "$workdir/port" ] && break; sleep 0.1; done
    run_dir=$(DEMO_MODEL_KEY=demo-key-not-a-secret "$host" run harbor terminus scripted-model \
        --benchmark-params '{"path": "examples/harbor"}' --env sandbox \
        --model-base-url "http://127.0.0.1:$(cat "$workdir/port")/v1" --model-api-key '${DEMO_MODEL_KEY}' \
        --model-params '{"pricing": {"input": 3.0, "output": 15.0, "cached_input": 0.3}}' \
        --results-dir "$results")
    echo
    echo "results: $run_dir"
    echo "  summary.md, metrics.json, details/normal/<task>/attempt-1/result.json (trajectory: every bash step)"
    ;;
test)
    ensure_tools
    ensure_harbor_oracle
    ensure_model_sdks
    start_docker
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
