#!/bin/sh
# The reference solution, run in the workspace.
printf '1\n2\n3\n' > count.txt
