# The user guide's build and link check, sourced by dev.sh (which defines profile_dir).
# shellcheck shell=bash

# mdBook, the user guide's builder (docs/book.toml, docs/src/): installed from crates.io into
# ~/.cache/agentcompass-host/tools/mdbook-<version> when missing: no default features (no
# server, watcher or search index) and unoptimized — the book builds in 0.2 s either way, and
# the install takes 36 s on 2 cores (63 CPU-s) instead of 69 s (113 CPU-s), which matters on a
# fresh CI machine.
MDBOOK_VERSION=0.4.52
mdbook_root() { echo "${XDG_CACHE_HOME:-$HOME/.cache}/agentcompass-host/tools/mdbook-$MDBOOK_VERSION"; }
ensure_mdbook() {
    [ -x "$(mdbook_root)/bin/mdbook" ] && return
    echo "installing mdbook $MDBOOK_VERSION into $(mdbook_root) (builds the user guide)" >&2
    CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 \
        CARGO_PROFILE_RELEASE_DEBUG=false \
        cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features \
        --root "$(mdbook_root)" --quiet
}
# `start_mdbook_install`: ensure_mdbook in the background (it overlaps the build);
# `check_docs` waits for it, builds the guide into <target>/book and checks every relative link
# and anchor of the guide, the README, CONTRIBUTING.md, ARCHITECTURE.md and docs/decisions/ in
# the Markdown and in the built HTML, and that every shell block says what it needs
# (docs/check.py: one line per problem, naming the file and the link).
MDBOOK_PID=""
MDBOOK_LOG=""
start_mdbook_install() {
    MDBOOK_LOG="$(mktemp /tmp/agentcompass-mdbook.XXXXXX)"
    ensure_mdbook >"$MDBOOK_LOG" 2>&1 &
    MDBOOK_PID=$!
}
check_docs() {
    if ! wait "$MDBOOK_PID"; then
        cat "$MDBOOK_LOG" >&2
        echo "dev.sh: installing mdbook $MDBOOK_VERSION failed" >&2
        exit 1
    fi
    cat "$MDBOOK_LOG" >&2
    rm -f "$MDBOOK_LOG"
    local book output
    book="$(realpath -m "$(profile_dir book)")"
    if ! output="$("$(mdbook_root)/bin/mdbook" build docs --dest-dir "$book" 2>&1)"; then
        echo "$output" >&2
        echo "dev.sh: mdbook build docs failed" >&2
        exit 1
    fi
    python3 docs/check.py --html "$book" || { echo "dev.sh: the documentation has broken links (above)" >&2; exit 1; }
}
