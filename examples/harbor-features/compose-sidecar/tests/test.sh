#!/bin/bash
# Reward 1 when /app/greeting.txt holds the API's greeting (the compose file's default).
if [ "$(cat /app/greeting.txt 2>/dev/null)" = "hello from the sidecar" ]; then
  echo "greeting.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "greeting.txt is missing or wrong: $(cat /app/greeting.txt 2>&1)"
  echo 0 > /logs/verifier/reward.txt
fi
