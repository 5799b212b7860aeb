# Debian packages for the tests' tools (sourced by dev.sh and ci/slurm.sh).

# `install_missing WHY COMMAND:PACKAGE...`: installs each PACKAGE whose COMMAND is not on PATH
# with apt-get (through sudo when not root; `apt-get update` once if the first try fails), and
# fails with one line naming the packages when they cannot be installed.
install_missing() {
    local why="$1" pair missing=()
    shift
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    [ "${#missing[@]}" -gt 0 ] || return 0
    echo "installing ${missing[*]} ($why)" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
        { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y "${missing[@]}" >/dev/null; } ||
        { echo "${missing[*]} missing and could not be installed: apt-get install ${missing[*]}" >&2; return 1; }
}
