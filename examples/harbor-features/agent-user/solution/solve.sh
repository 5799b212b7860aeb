#!/bin/bash
echo "$UID" > /app/who.txt
