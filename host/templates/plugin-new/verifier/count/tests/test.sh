#!/bin/sh
# Hidden tests: half the reward for count.txt having three lines, half for the right ones.
cd "$AGENTCOMPASS_WORKSPACE" || exit 1
passed=0
[ "$(wc -l < count.txt 2>/dev/null)" -eq 3 ] 2>/dev/null && passed=$((passed + 1))
[ "$(cat count.txt 2>/dev/null)" = "$(printf '1\n2\n3')" ] && passed=$((passed + 1))
case $passed in 2) reward=1 ;; 1) reward=0.5 ;; *) reward=0 ;; esac
echo "$reward" > "$AGENTCOMPASS_VERIFIER_DIR/reward.txt"
