#!/bin/bash
echo "the agent must never run" > /app/ran.txt
