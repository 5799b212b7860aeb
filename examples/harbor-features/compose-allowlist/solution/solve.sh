#!/bin/bash
wget -q -O /app/main.txt http://registry.internal:18741/greeting-suffix.txt
# busybox wget ignores NO_PROXY: the service is reached directly with `-Y off`.
wget -Y off -q -O /app/sidecar.txt http://fetcher:8000/cgi-bin/fetch
# A host off the list is refused.
if wget -q -O /dev/null http://denied.internal:18741/greeting-suffix.txt; then
  echo reached > /app/denied.txt
fi
