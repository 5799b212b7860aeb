#!/bin/sh
# Runs a command as the unprivileged user of `./dev.sh test`'s rootless Podman tier: cargo's
# target runner there (CARGO_TARGET_<triple>_RUNNER), so nextest starts every test binary as
# that user, with its home and runtime directory and the rest of the environment unchanged.
set -eu
exec setpriv --reuid="$AGENTCOMPASS_RUN_AS_USER" --regid="$AGENTCOMPASS_RUN_AS_USER" --init-groups \
    env HOME="$AGENTCOMPASS_RUN_AS_HOME" USER="$AGENTCOMPASS_RUN_AS_USER" \
    LOGNAME="$AGENTCOMPASS_RUN_AS_USER" XDG_RUNTIME_DIR="$AGENTCOMPASS_RUN_AS_RUNTIME_DIR" "$@"
