#!/usr/bin/env bash
# Stops the cluster tests/slurm/start_cluster.sh started in a folder: the daemons whose pids it
# recorded in run/pids (slurmd, slurmctld, munged), SIGTERM, then SIGKILL after 5 s. The folder
# itself is kept.
dir=${1:?usage: stop_cluster.sh <folder>}
pids=()
if [ -s "$dir/run/pids" ]; then
  while read -r pid; do
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done < "$dir/run/pids"
fi
for _ in $(seq 50); do
  alive=0
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
  [ "$alive" = 0 ] && exit 0
  sleep 0.1
done
for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
exit 0
