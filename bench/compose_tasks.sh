# Shared by the benches of two-service compose tasks (compose_overhead.sh,
# compose_side_by_side.sh); sourced, not run.

# Builds, on the Docker engine at $DOCKER_HOST, the images the tasks name (fully qualified,
# as a private Podman store needs them): `docker.io/library/ubuntu:24.04` — busybox with bash,
# the root user and the applets Harbor's transfers use — and `docker.io/library/busybox:1.36`
# (every applet linked). DIR holds their contexts.
compose_base_images() {
    local dir="$1"
    # shellcheck source=/dev/null
    source "$ROOT/bench/one_image_tasks.sh"
    base_image_context "$dir/ubuntu" \
        'RUN echo "root:x:0:0:root:/root:/bin/sh" > /etc/passwd && echo "root:x:0:" > /etc/group' \
        'RUN for t in ln tar gzip chown touch dirname basename tee wget; do [ -e /bin/$t ] || /bin/busybox ln -s busybox /bin/$t; done'
    DOCKER_BUILDKIT=0 docker build -q -t docker.io/library/ubuntu:24.04 "$dir/ubuntu" >/dev/null 2>&1
    mkdir -p "$dir/busybox"
    printf '%s\n' 'FROM agentcompass-test/busybox:1' 'RUN ["/bin/busybox", "--install", "-s", "/bin"]' \
        >"$dir/busybox/Dockerfile"
    DOCKER_BUILDKIT=0 docker build -q -t docker.io/library/busybox:1.36 "$dir/busybox" >/dev/null 2>&1
}

# Writes N two-service Harbor tasks under DIR (t0, t1, ...): `main` (`FROM ubuntu:24.04`)
# gated by `service_healthy` on `api` (busybox httpd serving `answer.txt` from a read-only
# bind of the task's `environment/www`, its health check a `wget` every 100 ms); the solution
# fetches the answer from `http://api:8000/`, the verifier compares.
compose_tasks() {
    local tasks="$1" n="$2" i dir
    for i in $(seq 0 $((n - 1))); do
        dir="$tasks/t$i"
        mkdir -p "$dir/solution" "$dir/tests" "$dir/environment/www"
        printf 'schema_version = "1.4"\n[environment]\ncpus = 1\nmemory_mb = 2048\nworkdir = "/app"\n' \
            >"$dir/task.toml"
        echo 'Save http://api:8000/answer.txt to /app/answer.txt.' >"$dir/instruction.md"
        printf '#!/bin/bash\nwget -q -O /app/answer.txt http://api:8000/answer.txt\n' \
            >"$dir/solution/solve.sh"
        printf '#!/bin/bash\n[ "$(cat /app/answer.txt)" = forty-two ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n' \
            >"$dir/tests/test.sh"
        echo forty-two >"$dir/environment/www/answer.txt"
        printf 'FROM docker.io/library/ubuntu:24.04\nWORKDIR /app\n' >"$dir/environment/Dockerfile"
        cat >"$dir/environment/docker-compose.yaml" <<'EOF'
services:
  main:
    depends_on:
      api:
        condition: service_healthy
  api:
    image: docker.io/library/busybox:1.36
    command: ["httpd", "-f", "-p", "8000", "-h", "/www"]
    volumes:
      - ./www:/www:ro
    healthcheck:
      test: ["CMD", "wget", "-q", "-O", "/dev/null", "http://localhost:8000/answer.txt"]
      interval: 100ms
      retries: 50
EOF
    done
}
