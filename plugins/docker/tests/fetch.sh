# fetch [-d] HOST PORT: GET http://HOST:PORT/ with busybox nc (the test image's wget
# crashes). With $http_proxy set (and no -d) the request goes to the proxy, as curl sends
# it: absolute URI and Proxy-Authorization: Basic of the URL's user:token. The request is
# written through a FIFO kept open until the answer ends (nc would half-close the
# connection at the end of its input, and the proxy closes a half-closed client). Prints
# the status code and the last line of the body ("200 two", "403 ..."), or "unreachable".
fetch() (
  trap '' PIPE
  direct=""; if [ "$1" = -d ]; then direct=1; shift; fi
  if [ -n "$http_proxy" ] && [ -z "$direct" ]; then
    rest=${http_proxy#http://}; cred=${rest%@*}; addr=${rest##*@}
    auth=$(printf '%s' "$cred" | busybox base64 | tr -d '\n')
    to_host=${addr%:*}; to_port=${addr##*:}
    request=$(printf 'GET http://%s:%s/ HTTP/1.1\r\nHost: %s:%s\r\nProxy-Authorization: Basic %s\r\nConnection: close' "$1" "$2" "$1" "$2" "$auth")
  else
    to_host=$1; to_port=$2
    request=$(printf 'GET / HTTP/1.1\r\nHost: %s:%s\r\nConnection: close' "$1" "$2")
  fi
  fifo=/tmp/.fetch.$$
  rm -f "$fifo" "$fifo.out"; busybox mkfifo "$fifo"
  nc -w 5 "$to_host" "$to_port" < "$fifo" > "$fifo.out" 2>/dev/null &
  pid=$!
  exec 3> "$fifo"
  printf '%s\r\n\r\n' "$request" >&3
  wait "$pid"
  exec 3>&-
  out=$(cat "$fifo.out"); rm -f "$fifo" "$fifo.out"
  if [ -z "$out" ]; then echo unreachable; return; fi
  printf '%s\n' "$out" | head -n 1 | tr -d '\r' | cut -d' ' -f2 | tr '\n' ' '
  printf '%s\n' "$out" | tail -n 1
)
