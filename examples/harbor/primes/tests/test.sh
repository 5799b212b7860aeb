#!/bin/bash
# Two rewards in reward.json: `reward` (1 when the file is exactly right) and `coverage`
# (the fraction of the ten primes below 30 that appear on a line of their own).
file=/app/primes.txt
expected=$(printf '%s\n' 2 3 5 7 11 13 17 19 23 29)
found=0
for p in $expected; do
  if grep -qx "$p" "$file" 2>/dev/null; then found=$((found + 1)); fi
done
if [ "$found" -eq 10 ]; then coverage=1.0; else coverage="0.$found"; fi
if [ "$(cat "$file" 2>/dev/null)" = "$expected" ]; then reward=1; else reward=0; fi
echo "found $found of 10 primes; exact match: $reward"
printf '{"reward": %s, "coverage": %s}\n' "$reward" "$coverage" > /logs/verifier/reward.json
