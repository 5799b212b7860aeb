#!/bin/bash
wget -q -O /app/greeting.txt http://api:8000/cgi-bin/greeting
