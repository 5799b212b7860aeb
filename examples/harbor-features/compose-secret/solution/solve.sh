#!/bin/bash
# The token is printed too: the host must keep it out of everything it writes.
wget -q -O - http://api:8000/cgi-bin/token | tee /app/token.txt
