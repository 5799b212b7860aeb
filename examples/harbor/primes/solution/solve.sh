#!/bin/bash
for n in $(seq 2 29); do
  prime=1
  for d in $(seq 2 $((n - 1))); do
    if [ $((n % d)) -eq 0 ]; then prime=0; break; fi
  done
  if [ "$prime" -eq 1 ]; then echo "$n"; fi
done > /app/primes.txt
