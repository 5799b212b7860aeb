#!/bin/bash
# Reward 1 when the environment and its service both fetched the allowed file through the
# host's egress proxy, and the host off the list was refused.
expected="built with the network"
ok=1
[ "$(cat /app/main.txt 2>/dev/null)" = "$expected" ] || { echo "main.txt: $(cat /app/main.txt 2>&1)"; ok=0; }
[ "$(cat /app/sidecar.txt 2>/dev/null)" = "$expected" ] || { echo "sidecar.txt: $(cat /app/sidecar.txt 2>&1)"; ok=0; }
[ ! -e /app/denied.txt ] || { echo "denied.internal was reached"; ok=0; }
echo "$ok" > /logs/verifier/reward.txt
