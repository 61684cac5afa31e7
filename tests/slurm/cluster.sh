# A one-node Slurm cluster in a temporary folder, for the Slurm test and the submit benchmark:
# munged, slurmctld and slurmd, each with its state, sockets, pid and log files in that folder,
# on free ports, without systemd or cgroups (proctrack/linuxproc, task/none). Sourced, not run.
#
#   cluster_start DIR SPANK_PLUGIN_ARGS...   writes DIR/slurm.conf and starts the daemons;
#                                             SLURM_CONF and the munge socket point at them
#   cluster_stop                              stops whatever cluster_start started
# Set CLUSTER_PLUGSTACK=0 before cluster_start for a cluster without the memwatch plugin,
# and put a job_submit.lua in DIR to have it used (JobSubmitPlugins=lua when one is there).

SLURM_PLUGIN_DIR=${SLURM_PLUGIN_DIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}
cluster_pids=()

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits up to $2 seconds for the command in $1 to succeed.
wait_for() {
  local deadline=$((SECONDS + $2))
  until eval "$1" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "cluster: timed out waiting for: $1" >&2; return 1; }
    sleep 0.2
  done
}

cluster_start() {
  local dir=$1; shift
  CLUSTER_DIR=$dir
  mkdir -p "$dir"/{state,spool,log,munge}
  chmod 0700 "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" --force
  wait_for "[ -S '$dir/munge/munge.socket' ] && [ -s '$dir/munge/munged.pid' ]" 10
  cluster_pids+=("$(cat "$dir/munge/munged.pid")")

  local node_mem=${CLUSTER_NODE_MEM_MB:-2048}
  local ctld_port slurmd_port
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  CLUSTER_NODE=$(hostname -s)
  {
    echo "ClusterName=memwatchtest"
    echo "SlurmctldHost=$CLUSTER_NODE(127.0.0.1)"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmdPort=$slurmd_port"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/munge.socket"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "PluginDir=$SLURM_PLUGIN_DIR"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core_Memory"
    echo "SchedulerType=sched/builtin"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "MailProg=/bin/true"
    echo "InactiveLimit=0"
    echo "KillWait=2"
    echo "MinJobAge=300"
    echo "PlugStackConfig=$dir/plugstack.conf"
    [ -f "$dir/job_submit.lua" ] && echo "JobSubmitPlugins=lua"
    echo "NodeName=$CLUSTER_NODE NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$node_mem State=UNKNOWN"
    echo "PartitionName=debug Nodes=$CLUSTER_NODE Default=YES MaxTime=INFINITE State=UP"
  } >"$dir/slurm.conf"
  if [ "${CLUSTER_PLUGSTACK:-1}" = 1 ]; then
    echo "required $*" >"$dir/plugstack.conf"
  else
    : >"$dir/plugstack.conf"
  fi
  export SLURM_CONF=$dir/slurm.conf

  slurmctld -f "$dir/slurm.conf" -L "$dir/log/slurmctld.log" -i
  wait_for "[ -s '$dir/slurmctld.pid' ]" 15
  cluster_pids+=("$(cat "$dir/slurmctld.pid")")
  slurmd -f "$dir/slurm.conf" -L "$dir/log/slurmd.log"
  wait_for "[ -s '$dir/slurmd.pid' ]" 15
  cluster_pids+=("$(cat "$dir/slurmd.pid")")
  wait_for "sinfo -h -o %t | grep -qx idle" 30
}

cluster_stop() {
  local pid
  for ((i = ${#cluster_pids[@]} - 1; i >= 0; i--)); do
    pid=${cluster_pids[i]}
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  cluster_pids=()
}
