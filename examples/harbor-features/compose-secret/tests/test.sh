#!/bin/bash
# Reward 1 when /app/token.txt holds the token the API hands out.
expected="$(wget -q -O - http://api:8000/cgi-bin/token)"
if [ -n "$expected" ] && [ "$(cat /app/token.txt 2>/dev/null)" = "$expected" ]; then
  echo "token.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "token.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi
