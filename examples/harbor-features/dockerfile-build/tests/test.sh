#!/bin/bash
# Reward 1 when /app/greeting.txt holds what the image's `greet` prints (so the image was
# built, with its tool and its downloaded data) and the task's network policy holds.
expected="$(greet 2>/dev/null)"
if [ -n "$expected" ] && [ "$(cat /app/greeting.txt 2>/dev/null)" = "$expected" ]; then
  echo "greeting.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "greeting.txt is missing or wrong (expected: ${expected:-no greet tool})"
  echo 0 > /logs/verifier/reward.txt
fi
