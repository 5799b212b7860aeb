#!/bin/bash
# Reward 1 when /app/kernel.txt names the kernel.
if [ "$(cat /app/kernel.txt 2>/dev/null)" = "$(uname -s)" ]; then
  echo "kernel.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "kernel.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi
