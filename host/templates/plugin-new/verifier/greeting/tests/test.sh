#!/bin/sh
# Hidden tests: half the reward for hello.txt existing, half for its exact content.
cd "$AGENTCOMPASS_WORKSPACE" || exit 1
passed=0
[ -f hello.txt ] && passed=$((passed + 1))
[ "$(cat hello.txt 2>/dev/null)" = "Hello, world!" ] && passed=$((passed + 1))
case $passed in 2) reward=1 ;; 1) reward=0.5 ;; *) reward=0 ;; esac
echo "$reward" > "$AGENTCOMPASS_VERIFIER_DIR/reward.txt"
