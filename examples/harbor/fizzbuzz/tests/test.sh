#!/bin/bash
# Reward 1 when /app/fizzbuzz.txt is FizzBuzz for 1..15, one item per line.
expected=$(printf '%s\n' 1 2 Fizz 4 Buzz Fizz 7 8 Fizz Buzz 11 Fizz 13 14 FizzBuzz)
actual=$(cat /app/fizzbuzz.txt 2>/dev/null)
if [ "$actual" = "$expected" ]; then
  echo "fizzbuzz.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "fizzbuzz.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi
