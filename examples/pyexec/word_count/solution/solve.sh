#!/bin/bash
# The reference solution: writes solution.py into the working directory (the workspace).
cat > solution.py <<'PY'
def word_count(text):
    return len(text.split())
PY
