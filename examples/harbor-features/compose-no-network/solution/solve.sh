#!/bin/bash
wget -q -O /app/answer.txt http://api:8000/answer.txt
