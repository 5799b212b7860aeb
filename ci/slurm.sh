# shellcheck shell=bash
# A real three-node Slurm cluster on this machine for the tests (sourced by dev.sh): one
# slurmctld and three slurmd (nodes n1, n2, n3, all on 127.0.0.1, each on its own port), with
# their own munged, key, config, state, spool, pid and log files under one private directory,
# ${AGENTCOMPASS_SLURM_DIR:-${TMPDIR:-/tmp}/agentcompass-slurm}. The system's /etc/slurm,
# /etc/munge and munged are never read nor touched. `start_slurm` exports SLURM_CONF (so
# sbatch, squeue, scancel, scontrol, sinfo and srun talk to this cluster) and
# AGENTCOMPASS_TEST_SLURM_CONF (the same path, for the tests); `stop_slurm` cancels every job and
# stops the daemons. The directory is kept after a stop (its logs); the next start wipes it.
#
# Ports: slurmctld on ${AGENTCOMPASS_SLURM_PORT:-17000}, slurmd nX on that + X (17001-17003).
# Each node has ${AGENTCOMPASS_SLURM_CPUS:-4} CPUs whatever the machine has (config_overrides):
# 12 one-CPU jobs run at once on 2 cores. A node whose slurmd stops is `down` within ~30 s
# (SlurmdTimeout=10); its --requeue jobs are requeued (and may start again 21 s later,
# cred_expire); it comes back when its slurmd does (ReturnToService=2), which then ends the
# job steps that outlived it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/packages.sh"

slurm_dir() { echo "${AGENTCOMPASS_SLURM_DIR:-${TMPDIR:-/tmp}/agentcompass-slurm}"; }
SLURM_NODES=(n1 n2 n3)

# Installs Debian's slurm-wlm and munge when slurmctld or munged is missing.
ensure_slurm_packages() {
    install_missing "Debian packages; the tests' Slurm cluster" slurmctld:slurm-wlm munged:munge
}

# The pid in pid file $1 when that process is alive and its command line has $2 (so a reused
# pid is never taken for a daemon of ours); else nothing.
slurm_live_pid() {
    local file="$1" name="$2" pid
    [ -s "$file" ] || return 0
    pid="$(tr -dc 0-9 <"$file")"
    [ -n "$pid" ] && slurm_alive "$pid" || return 0
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -F -- "$name" >/dev/null && echo "$pid"
    return 0
}

# Whether process $1 runs (exists and is no zombie).
slurm_alive() {
    local stat
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [ -n "$stat" ] && [ "${stat%% *}" != Z ]
}

# Stops the processes $@ (TERM, then KILL after 10 s).
slurm_kill() {
    [ "$#" -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null || true
    local pid _
    for _ in $(seq 50); do
        for pid in "$@"; do
            slurm_alive "$pid" && break
            pid=""
        done
        [ -n "$pid" ] || return 0
        sleep 0.2
    done
    kill -KILL "$@" 2>/dev/null || true
}

# Stops the cluster of the private directory: cancels every job (while slurmctld is up), then
# stops at once the slurmd, the job steps left behind, slurmctld and munged. Idempotent; never
# fails.
stop_slurm() {
    local dir conf pids=() pid node i _
    dir="$(slurm_dir)"
    conf="$dir/slurm.conf"
    [ -d "$dir" ] || return 0
    if [ -n "$(slurm_live_pid "$dir/run/slurmctld.pid" slurmctld)" ]; then
        SLURM_CONF="$conf" squeue -h -o %A 2>/dev/null | xargs -r env SLURM_CONF="$conf" scancel 2>/dev/null || true
        # Up to KillWait (5 s) and a little more for the jobs to end (those of a node whose
        # slurmd is gone never do: their processes are stopped below).
        for _ in $(seq 24); do
            [ -z "$(SLURM_CONF="$conf" squeue -h -o %A 2>/dev/null || true)" ] && break
            sleep 0.25
        done
    fi
    for node in "${SLURM_NODES[@]}"; do
        pids+=("$(slurm_live_pid "$dir/run/slurmd-$node.pid" slurmd)")
    done
    pids+=("$(slurm_live_pid "$dir/run/slurmctld.pid" slurmctld)")
    pids+=("$(slurm_live_pid "$dir/munge/munged.pid" munged)")
    # A slurmstepd outlives its slurmd (killed by a test, say), and so do the job's processes
    # under it. Ours carry AGENTCOMPASS_SLURM_CLUSTER=$dir (set for the daemons by start_slurm)
    # or run in $dir/log (where a slurmd, and so its steps, runs); each is killed with its
    # descendants (an orphaned slurmstepd ignores TERM). None is left once every job has ended.
    local steps=() cwd
    for pid in $(pgrep -f '^slurmstepd' 2>/dev/null || true); do
        cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null || true)"
        if [[ "$cwd/" == "$dir"/* ]] ||
            tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -Fx "AGENTCOMPASS_SLURM_CLUSTER=$dir" >/dev/null; then
            steps+=("$pid")
        fi
    done
    i=0
    while [ "$i" -lt "${#steps[@]}" ]; do
        for pid in $(pgrep -P "${steps[$i]}" 2>/dev/null || true); do
            steps+=("$pid")
        done
        i=$((i + 1))
    done
    [ "${#steps[@]}" -eq 0 ] || kill -KILL "${steps[@]}" 2>/dev/null || true
    # shellcheck disable=SC2046 # the pids, empty ones dropped
    slurm_kill $(printf '%s\n' "${pids[@]}" "${steps[@]}" | grep -x '[0-9][0-9]*' || true)
    return 0
}

# Prints the tail of every log of the cluster (after a failed start).
slurm_logs() {
    local dir log
    dir="$(slurm_dir)"
    for log in "$dir/munge/munged.log" "$dir"/log/*.log; do
        [ -f "$log" ] || continue
        echo "== $log" >&2
        tail -n 40 "$log" >&2
    done
}

# Writes the config of the cluster in $1 (the private directory) to $1/slurm.conf.
write_slurm_conf() {
    local dir="$1" port="${AGENTCOMPASS_SLURM_PORT:-17000}" cpus="${AGENTCOMPASS_SLURM_CPUS:-4}"
    local user i node
    user="$(id -un)"
    {
        cat <<EOF
# The tests' Slurm cluster (ci/slurm.sh); everything under $dir.
ClusterName=agentcompass
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a job step credential's lifetime, and how long a requeued job waits before it
# may start again (default 120 s).
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=20
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: processes are tracked by their parentage, tasks are not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
# CPUs are scheduled one by one; a node's CPUs are the configured ones, not the machine's.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
# No accounting daemon; finished jobs are written to a text file (and stay in squeue and
# scontrol for MinJobAge seconds).
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
MinJobAge=300
# A node silent for 10 s is down; its requeueable jobs are requeued; it is back when it
# registers again.
SlurmdTimeout=10
ReturnToService=2
JobRequeue=1
KillWait=5
# Pending jobs are looked at every 5 s (default 60 s; a requeued job is eligible again
# cred_expire + 1 s after its requeue), besides on every submission and job end; a batch job
# is started at once (batch_sched_delay default 3 s).
SchedulerParameters=sched_interval=5,bf_interval=5,batch_sched_delay=0
InactiveLimit=0
MailProg=/bin/true
EOF
        i=0
        for node in "${SLURM_NODES[@]}"; do
            i=$((i + 1))
            echo "NodeName=$node NodeAddr=127.0.0.1 Port=$((port + i)) CPUs=$cpus RealMemory=1024 State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=n[1-${#SLURM_NODES[@]}] Default=YES MaxTime=INFINITE State=UP"
    } >"$dir/slurm.conf"
}

# Starts the cluster (stopping first whatever a previous run left of it) and waits until every
# node is idle (60 s at most, then prints the logs and fails). Exports SLURM_CONF and
# AGENTCOMPASS_TEST_SLURM_CONF.
start_slurm() {
    local dir conf node state _
    dir="$(slurm_dir)"
    conf="$dir/slurm.conf"
    case "$dir" in
    "" | / | "$HOME" | "$HOME/") echo "start_slurm: refusing to use $dir as the cluster's directory" >&2; return 1 ;;
    esac
    stop_slurm
    rm -rf "$dir"
    # munged wants every directory above its socket searchable by all (and none writable by
    # others); the key itself is readable by its owner only.
    mkdir -p "$dir/munge" "$dir/state" "$dir/run" "$dir/log"
    chmod 0755 "$dir" "$dir/munge"
    for node in "${SLURM_NODES[@]}"; do
        mkdir -p "$dir/spool/$node"
    done
    # A fresh key of our own.
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$dir/munge/munge.key"
    write_slurm_conf "$dir"
    # Marks every daemon (and the job steps and jobs they start) as this cluster's.
    export AGENTCOMPASS_SLURM_CLUSTER="$dir"
    munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed" ||
        { slurm_logs; echo "munged did not start" >&2; return 1; }
    SLURM_CONF="$conf" slurmctld -f "$conf" ||
        { slurm_logs; echo "slurmctld did not start" >&2; return 1; }
    for node in "${SLURM_NODES[@]}"; do
        SLURM_CONF="$conf" slurmd -N "$node" -f "$conf" ||
            { slurm_logs; echo "slurmd $node did not start" >&2; return 1; }
    done
    unset AGENTCOMPASS_SLURM_CLUSTER
    export SLURM_CONF="$conf"
    export AGENTCOMPASS_TEST_SLURM_CONF="$conf"
    local idle=""
    for node in "${SLURM_NODES[@]}"; do
        idle+="$node idle "
    done
    for _ in $(seq 240); do
        state="$(sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | tr '\n' ' ' || true)"
        [ "$state" = "$idle" ] && return 0
        sleep 0.25
    done
    slurm_logs
    echo "the Slurm cluster did not come up in 60 s (sinfo: ${state:-nothing})" >&2
    return 1
}
