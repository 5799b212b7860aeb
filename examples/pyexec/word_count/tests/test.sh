#!/bin/bash
# The hidden tests: import solution.py from the workspace, run the checks, and write the
# fraction passed as the reward.
set -u
cd "$AGENTCOMPASS_WORKSPACE"
python3 -B "$AGENTCOMPASS_TESTS_DIR/check.py" > "$AGENTCOMPASS_VERIFIER_DIR/reward.txt"
