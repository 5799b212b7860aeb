#!/bin/bash
wget -q -O /app/index.html http://web:80/
