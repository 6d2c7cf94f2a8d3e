#!/usr/bin/env bash
# Starts a one-node Slurm cluster in a folder, as the current user, without systemd: munged (with a
# key of its own), slurmctld and slurmd on free local ports, the node with two fake GPUs
# (GresTypes=gpu; gres.conf's File= names plain files in the folder) so `--gres=gpu:1` jobs
# schedule. Used by the Slurm test of `croq sweep submit --slurm` (tests/cli/sweep_slurm_cli_test.cpp)
# and by hand:
#
#   eval "$(tests/slurm/start_cluster.sh /tmp/slurm-x)"   # exports SLURM_CONF, prints nothing else
#   sbatch --gres=gpu:1 --wrap 'echo $CUDA_VISIBLE_DEVICES'; squeue
#   tests/slurm/stop_cluster.sh /tmp/slurm-x
#
# Prints `export SLURM_CONF=<folder>/slurm.conf` on stdout once the node is idle (about a second).
# Exits 77 with the reason on stderr where the cluster cannot run here: the Debian packages are not
# installed (slurmctld slurmd slurm-client munge: scripts/setup.sh installs them) or a daemon does
# not start (its log is shown). Where munged cannot run (its key or socket checks), the cluster
# falls back to Slurm's auth/none so the jobs still run; CROQ_SLURM_AUTH=munge|none forces one.
set -uo pipefail
dir=${1:?usage: start_cluster.sh <folder>}
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
skip() { echo "start_cluster: $*" >&2; "$(dirname "$0")/stop_cluster.sh" "$dir" >/dev/null 2>&1; exit 77; }

for p in slurmctld slurmd sbatch squeue scancel sinfo; do
  command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
    skip "$p is not installed (Debian: slurmctld slurmd slurm-client munge; scripts/setup.sh installs them)"
done
PATH=$PATH:/usr/sbin
user=$(id -un)
# Every daemon runs in the foreground, in the background of this script, its pid in run/pids (for
# stop_cluster.sh; a daemon that fails its start leaves nothing behind).
mkdir -p "$dir/run" "$dir/log"
: > "$dir/run/pids"
start() {
  local name
  name=$(basename "$1")
  "$@" >"$dir/log/$name.out" 2>&1 </dev/null &
  echo $! >> "$dir/run/pids"
  last_pid=$!
}
alive() { kill -0 "$last_pid" 2>/dev/null; }
mkdir -p "$dir"/{state,spool,dev,munge}
chmod 700 "$dir/munge"
: > "$dir/dev/nvidia0"
: > "$dir/dev/nvidia1"

# Two free TCP ports on the loopback address.
read -r ctld_port slurmd_port < <(python3 - <<'PY'
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])
PY
) || skip "no free local port (python3 is needed to find one)"

auth=${CROQ_SLURM_AUTH:-munge}
if [ "$auth" = munge ]; then
  if ! command -v munged >/dev/null 2>&1 && [ ! -x /usr/sbin/munged ]; then
    auth=none
  else
    munged=$(command -v munged || echo /usr/sbin/munged)
    head -c 1024 /dev/urandom > "$dir/munge/munge.key" && chmod 400 "$dir/munge/munge.key"
    start "$munged" --foreground --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
      --force
    for _ in $(seq 50); do [ -S "$dir/munge/munge.socket" ] && break; alive || break; sleep 0.05; done
    if [ ! -S "$dir/munge/munge.socket" ]; then
      echo "start_cluster: munged did not start here ($(tail -n 1 "$dir/log/munged.out")); using auth/none" >&2
      "$(dirname "$0")/stop_cluster.sh" "$dir" >/dev/null 2>&1
      auth=none
    fi
  fi
fi
if [ "$auth" = munge ]; then
  auth_lines="AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge"
else
  auth_lines="AuthType=auth/none
CredType=cred/none"
fi

cpus=$(nproc)
cat > "$dir/slurm.conf" <<CONF
# A one-node test cluster written by tests/slurm/start_cluster.sh
ClusterName=croqtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
$auth_lines
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=600
KillWait=5
Waittime=0
MaxArraySize=10001
NodeName=croqnode NodeHostname=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname) NodeAddr=127.0.0.1 CPUs=$cpus Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=croqnode Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$dir/gres.conf" <<CONF
AutoDetect=off
NodeName=croqnode Name=gpu File=$dir/dev/nvidia[0-1]
CONF
# slurmd 22.05 loads a cgroup plugin even when no job uses one: the autodetected one, v1 or v2
# (its init only looks at the mount); the jobs use proctrack/linuxproc and task/none, no cgroup.
cat > "$dir/cgroup.conf" <<CONF
CgroupPlugin=${CROQ_SLURM_CGROUP:-autodetect}
CONF
export SLURM_CONF=$dir/slurm.conf

start "$(command -v slurmctld)" -D -i
ctld_pid=$last_pid
start "$(command -v slurmd)" -D -N croqnode
slurmd_pid=$last_pid

# Ready once the node is idle (a few tenths of a second; 20 s at most).
for _ in $(seq 200); do
  kill -0 "$ctld_pid" 2>/dev/null ||
    skip "slurmctld did not start: $(tail -n 3 "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" 2>/dev/null)"
  kill -0 "$slurmd_pid" 2>/dev/null ||
    skip "slurmd did not start: $(tail -n 3 "$dir/log/slurmd.out" "$dir/log/slurmd.log" 2>/dev/null)"
  state=$(sinfo -h -n croqnode -o %t 2>/dev/null)
  case "$state" in idle*) echo "export SLURM_CONF=$dir/slurm.conf"; exit 0 ;; esac
  sleep 0.1
done
skip "the node did not become idle (state '$state'): $(tail -n 5 "$dir/log/slurmd.log" "$dir/log/slurmctld.log" 2>/dev/null)"
