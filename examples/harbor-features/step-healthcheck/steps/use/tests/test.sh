#!/bin/bash
# Reward 1 when the agent used the service, which the step's health check saw ready.
if [ "$(cat /app/used.txt 2>/dev/null)" = "ready" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
