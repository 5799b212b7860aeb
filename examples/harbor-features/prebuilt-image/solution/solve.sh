#!/bin/bash
uname -s > /app/kernel.txt
