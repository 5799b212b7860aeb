#!/bin/bash
cp /app/service.ready /app/used.txt
