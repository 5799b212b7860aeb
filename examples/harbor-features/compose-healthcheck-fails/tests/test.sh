#!/bin/bash
echo 0 > /logs/verifier/reward.txt
