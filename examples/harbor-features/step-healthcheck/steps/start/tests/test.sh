#!/bin/bash
if [ "$(cat /app/start.txt 2>/dev/null)" = "started" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
