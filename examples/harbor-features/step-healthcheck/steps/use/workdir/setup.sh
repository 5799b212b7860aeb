#!/bin/bash
# Starts the step's "service": it is ready from the next second on.
date +%s > /app/service.started
rm -f /app/service.ready
