#!/bin/bash
# Never reached: the environment's health check fails before the agent runs.
if [ -f /app/done.txt ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
