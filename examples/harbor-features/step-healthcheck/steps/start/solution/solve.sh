#!/bin/bash
echo started > /app/start.txt
