#!/bin/bash
# Reward 1 when the service's answer is saved and nothing outside the task's services
# answers: not the host behind the network's gateway (the tests serve port 18742 on all of
# its addresses), not a public name.
ok=1
[ "$(cat /app/answer.txt 2>/dev/null)" = "forty-two" ] || { echo "answer.txt is missing or wrong"; ok=0; }
gateway="$(ip route 2>/dev/null | awk '/^default/ {print $3}')"
if [ -n "$gateway" ] && wget -q -T 3 -O /dev/null "http://$gateway:18742/" 2>/dev/null; then
  echo "the host at $gateway answered"; ok=0
fi
if (wget -q -T 3 -O /dev/null http://example.com/) >/dev/null 2>&1; then echo "example.com answered"; ok=0; fi
echo "$ok" > /logs/verifier/reward.txt
