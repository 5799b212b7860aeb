#!/bin/bash
# The reference solution: writes solution.py into the working directory (the workspace).
cat > solution.py <<'PY'
def add(a, b):
    return a + b
PY
