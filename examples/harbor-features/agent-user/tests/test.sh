#!/bin/bash
# The agent ran as `agent` (uid 1000); the verifier runs as `grader` (uid 1001).
if [ "$(cat /app/who.txt)" = 1000 ] && [ "$UID" = 1001 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "agent uid: $(cat /app/who.txt 2>&1), verifier uid: $UID"
  echo 0 > /logs/verifier/reward.txt
fi
