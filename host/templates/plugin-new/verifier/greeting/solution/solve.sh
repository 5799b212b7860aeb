#!/bin/sh
# The reference solution, run in the workspace.
echo 'Hello, world!' > hello.txt
