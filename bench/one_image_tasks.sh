# Shared by the benches of Harbor tasks that ship their own image (task_image_overhead.sh,
# harbor_side_by_side.sh); sourced, not run.

# Assembles in DIR the context of the tasks' base image: busybox (the tests' image
# `agentcompass-test/busybox:1`) with the host's bash as `sh` (busybox's would run its own
# `find`, which has no `-delete`) and the host's `find`, then the RUN lines given after DIR.
base_image_context() {
    local dir="$1" lib
    shift
    mkdir -p "$dir/root/bin" "$dir/root/usr/bin"
    cp /usr/bin/bash "$dir/root/bin/bash"
    cp /usr/bin/find "$dir/root/usr/bin/find"
    for lib in $(ldd /usr/bin/bash /usr/bin/find | grep -o '/[^ :]*' | grep -v '^/usr/bin/'); do
        mkdir -p "$dir/root$(dirname "$lib")"
        cp "$lib" "$dir/root$lib"
    done
    printf '%s\n' 'FROM agentcompass-test/busybox:1' 'COPY root/ /' 'RUN ln -sf /bin/bash /bin/sh' \
        "$@" >"$dir/Dockerfile"
}

# Writes N Harbor tasks under DIR (t0, t1, ...) sharing one `environment/Dockerfile` (`FROM
# ubuntu:24.04`, MARKER copied to /built.txt, `WORKDIR /app`): the solution copies /built.txt
# to /app/seen.txt, the verifier compares them.
one_image_tasks() {
    local tasks="$1" n="$2" marker="$3" i dir
    for i in $(seq 0 $((n - 1))); do
        dir="$tasks/t$i"
        mkdir -p "$dir/solution" "$dir/tests" "$dir/environment"
        printf 'schema_version = "1.4"\n[environment]\ncpus = 1\nmemory_mb = 2048\nstorage_mb = 10240\nworkdir = "/app"\n' \
            >"$dir/task.toml"
        echo 'Copy /built.txt to /app/seen.txt.' >"$dir/instruction.md"
        printf '#!/bin/bash\ncat /built.txt > /app/seen.txt\n' >"$dir/solution/solve.sh"
        printf '#!/bin/bash\n[ "$(cat /built.txt)" = "$(cat /app/seen.txt)" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n' \
            >"$dir/tests/test.sh"
        echo "$marker" >"$dir/environment/marker.txt"
        printf 'FROM ubuntu:24.04\nCOPY marker.txt /built.txt\nWORKDIR /app\n' >"$dir/environment/Dockerfile"
    done
}
