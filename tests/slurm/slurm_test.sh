#!/usr/bin/env bash
# memwatch on a real one-node Slurm cluster (tests/slurm/cluster.sh): the SPANK plugin preloads
# the shim into a job and tags its run, job_submit.lua sizes jobs at submission through
# `memwatch advise`, and a dead or hung daemon leaves jobs as submitted.
#
#   slurm_test.sh MEMWATCH MEMWATCHD SHIM SPANK_PLUGIN JOB_SUBMIT_LUA PATTERNS
# PATTERNS is tests/interposer's program: `PATTERNS alloc_mib N` holds N MiB at once, so a
# run's peak is known in advance. Exit 77 (skipped) where Slurm is not installed or not root.
set -euo pipefail
memwatch=$1 memwatchd=$2 shim=$3 spank=$4 job_submit=$5 patterns=$6
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" != 0 ] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "skipped: needs root, slurmctld and munged (scripts/install-deps)"
  exit 77
fi

dir=$(mktemp -d /tmp/memwatch-slurm.XXXXXX)
chmod 0755 "$dir"
# shellcheck source=tests/slurm/cluster.sh
source "$here/cluster.sh"
daemon_pid=""
failed=1

cleanup() {
  set +e
  scancel --quiet --full --user=root 2>/dev/null
  wait_for "[ -z \"\$(squeue -h -o %i)\" ]" 20 2>/dev/null
  if [ -n "$daemon_pid" ]; then
    kill -CONT "$daemon_pid" 2>/dev/null
    kill "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
  fi
  cluster_stop
  if [ "$failed" = 1 ]; then
    for log in "$dir"/log/*.log "$dir"/memwatchd.log "$dir"/job*.out; do
      [ -f "$log" ] && { echo "---- $log"; tail -n 30 "$log"; }
    done
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# ---- memwatchd, on tcp as a cluster runs it, and a model of the workload from measured runs
ingest=tcp://127.0.0.1:$(free_port)
export MEMWATCH_QUERY=tcp://127.0.0.1:$(free_port)
"$memwatchd" --foreground --ingest "$ingest" --query "$MEMWATCH_QUERY" \
  --events "tcp://127.0.0.1:$(free_port)" --db "$dir/memwatch.db" >"$dir/memwatchd.log" 2>&1 &
daemon_pid=$!
wait_for "'$memwatch' status" 15 || fail "memwatchd did not start"

# The stand-in for unet3d-train: 8 MiB per unit of batch (the model must find that law).
for batch in 1 2 3 4 6 8 12 16; do
  MEMWATCH_ENDPOINT=$ingest MEMWATCH_WORKLOAD=unet3d-train MEMWATCH_PARAMS=batch=$batch \
    LD_PRELOAD=$shim "$patterns" alloc_mib $((8 * batch)) >/dev/null
done
wait_for "'$memwatch' predict --workload unet3d-train batch=32" 30 || fail "no model was fitted"
pass "a model of unet3d-train from 8 measured runs"

# ---- the cluster: node memory 2048 MiB, the plugin and the submit script in place
cp "$job_submit" "$dir/job_submit.lua"
settings() {  # settings POLICY
  cat >"$dir/memwatch-submit.conf" <<CONF
memwatch = $memwatch
timeout_s = 3
policy = $1
node_mem = 2048MiB
vary = batch
deadline_ms = 1500
query = $MEMWATCH_QUERY
CONF
}
settings fill
CLUSTER_NODE_MEM_MB=2048 cluster_start "$dir" "$spank" "shim=$shim" "endpoint=$ingest"

job_field() {  # job_field ID FIELD: a field of `scontrol show job -o`
  scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
wait_done() {  # wait_done ID
  wait_for "scontrol show job -o $1 | grep -Eq 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT)'" 60 ||
    fail "job $1 did not finish: $(scontrol show job -o "$1")"
  [ "$(job_field "$1" JobState)" = COMPLETED ] || fail "job $1: $(scontrol show job -o "$1")"
}

# ---- fill: no --mem, the model's bound becomes the request; the run is stored with its job id
# A batch script as `sbatch --wrap` writes them: /bin/sh, dash, which ends with _exit (the run
# must still be stored as finished, not killed).
printf '#!/bin/sh\necho "preload=${LD_PRELOAD:-none}"\n"%s" alloc_mib "$1"\n' "$patterns" \
  >"$dir/job.sh"
out=$(sbatch --parsable --memwatch=unet3d-train --memwatch-params batch=32 \
  -o "$dir/job-fill.out" "$dir/job.sh" 256 2>"$dir/sbatch.err") ||
  fail "sbatch refused the job: $(cat "$dir/sbatch.err")"
job=${out%%;*}
grep -q "memwatch: unet3d-train.*--mem set to" "$dir/sbatch.err" ||
  fail "sbatch said no word of the sizing: $(cat "$dir/sbatch.err")"
mem=$(job_field "$job" MinMemoryNode)
mem_mib=${mem%M}
[ "$mem_mib" != "$mem" ] && [ "$mem_mib" -ge 256 ] && [ "$mem_mib" -le 320 ] ||
  fail "job $job got MinMemoryNode=$mem, expected the bound of 256 MiB (256M to 320M)"
pass "fill: --mem set to ${mem} for batch=32 (256 MiB held)"
wait_done "$job"
# The run is stored as finished once its BYE is in: a moment after the job ends.
job_run_finished() {
  "$memwatch" runs --workload unet3d-train --json | /usr/bin/python3 -c '
import json, sys
runs = json.load(sys.stdin)["runs"]
sys.exit(not any(r["scheduler_job"].split(".")[0] == sys.argv[1] and r["status"] == "finished"
                 for r in runs))' "$1"
}
wait_for "job_run_finished $job" 10 || true
runs=$("$memwatch" runs --workload unet3d-train --json)
/usr/bin/python3 - "$runs" "$job" "$(hostname)" <<'PY' || fail "job $job's run is not stored with its job id: $runs"
import json, sys
runs, job, host = json.loads(sys.argv[1])["runs"], sys.argv[2], sys.argv[3]
mine = [r for r in runs if r["scheduler_job"].split(".")[0] == job]
assert len(mine) == 1, mine
r = mine[0]
assert r["status"] == "finished", r
assert r["scheduler_job"] == job + ".batch", r  # as sacct names the batch script's step
assert r["params"] == {"batch": 32}, r
assert r["host"] == host, r
assert 256 << 20 <= r["host_peak_bytes"] < 260 << 20, r
PY
pass "the job's run is stored with its job id, node and parameters"
grep -qx "preload=$shim" "$dir/job-fill.out" || fail "the shim was not preloaded: $(cat "$dir/job-fill.out")"
! grep -q "exceeds the capacity" "$dir/job-fill.out" || fail "the job was judged over its --mem"

report=$("$memwatch" report --slurm "$job" --json)
/usr/bin/python3 - "$report" "$mem_mib" <<'PY' || fail "report --slurm $job: $report"
import json, sys
job = json.loads(sys.argv[1])["jobs"][0]
mib = 1 << 20
host = job["host"]
assert host["requested_bytes"] == int(sys.argv[2]) * mib, host
assert 256 * mib <= host["measured_bytes"] < 260 * mib, host
# the model now (refitted with this run too): its prediction is the measured peak's
assert abs(host["predicted_bytes"] - host["measured_bytes"]) < 0.05 * host["measured_bytes"], host
assert host["upper_bytes"] >= host["predicted_bytes"], host
assert host["should_request_bytes"] >= host["measured_bytes"], host
assert host["should_request_bytes"] - host["measured_bytes"] < mib, host
assert job["workload"] == "unet3d-train" and job["state"] == "COMPLETED", job
PY
"$memwatch" report --slurm "$job"
"$memwatch" report --user root --last 3 | grep -q "^job $job " || fail "report --user root"
pass "report --slurm: requested, predicted, measured and what it should have requested"

# ---- a step: srun in a watched batch script is watched too, its run tagged JOBID.0 (another
# workload, so that the batch script's own run, bash and srun, stays out of the model above)
printf '#!/bin/bash\nsrun "%s" alloc_mib 64\n' "$patterns" >"$dir/job-step.sh"
job=$(sbatch --parsable --memwatch=step-check --memwatch-params batch=8 -o "$dir/job-step.out" \
  "$dir/job-step.sh" 2>/dev/null) || fail "the step job was refused"
job=${job%%;*}
wait_done "$job"
step_run_finished() {
  "$memwatch" runs --workload step-check --json | /usr/bin/python3 -c '
import json, sys
runs = json.load(sys.stdin)["runs"]
step = [r for r in runs if r["scheduler_job"] == sys.argv[1] + ".0" and r["status"] == "finished"]
sys.exit(not (len(step) == 1 and 64 << 20 <= step[0]["host_peak_bytes"] < 66 << 20
              and step[0]["params"] == {"batch": 8}))' "$1"
}
wait_for "step_run_finished $job" 10 ||
  fail "no run of step $job.0: $("$memwatch" runs --workload step-check --json)"
pass "an srun step of a watched job is a run of its own, tagged $job.0"

# ---- a request given by the user is kept under fill
job=$(sbatch --parsable --mem=100 --memwatch=unet3d-train --memwatch-params batch=32 \
  -o /dev/null --wrap true 2>/dev/null)
[ "$(job_field "${job%%;*}" MinMemoryNode)" = 100M ] || fail "fill changed a user's --mem=100"
pass "fill keeps a request the user gave"
settings raise
job=$(sbatch --parsable --mem=100 --memwatch=unet3d-train --memwatch-params batch=32 \
  -o /dev/null --wrap true 2>/dev/null)
mem=$(job_field "${job%%;*}" MinMemoryNode)
[ "${mem%M}" -ge 256 ] && [ "${mem%M}" -le 320 ] || fail "raise left --mem=100 at $mem"
pass "raise: --mem=100 raised to $mem"

# ---- reject: a job whose bound exceeds the node is refused, naming the batch that fits
settings reject
if sbatch --memwatch=unet3d-train --memwatch-params batch=1000 -o /dev/null --wrap true \
  >"$dir/sbatch.out" 2>"$dir/sbatch.err"; then
  fail "reject accepted batch=1000 (8000 MiB on a 2048 MiB node)"
fi
largest=$(sed -n 's/.*the largest batch that fits is \([0-9]*\).*/\1/p' "$dir/sbatch.err")
[ -n "$largest" ] && [ "$largest" -ge 240 ] && [ "$largest" -le 256 ] ||
  fail "the refusal does not name the largest batch (about 250): $(cat "$dir/sbatch.err")"
pass "reject: batch=1000 refused: $(grep -o 'memwatch:.*' "$dir/sbatch.err" | head -1)"
job=$(sbatch --parsable --memwatch=unet3d-train --memwatch-params batch=16 -o /dev/null \
  --wrap "$patterns alloc_mib 128" 2>/dev/null) || fail "reject refused batch=16, which fits"
mem=$(job_field "${job%%;*}" MinMemoryNode)
[ "${mem%M}" -ge 128 ] && [ "${mem%M}" -le 192 ] || fail "batch=16 got MinMemoryNode=$mem"
pass "reject: batch=16 accepted with --mem=$mem"

# ---- malformed parameters are refused at submission, naming them
if sbatch --memwatch=unet3d-train --memwatch-params batch=eight -o /dev/null --wrap true \
  >/dev/null 2>"$dir/sbatch.err"; then
  fail "a malformed --memwatch-params was accepted"
fi
grep -q -- "--memwatch-params 'batch=eight'" "$dir/sbatch.err" ||
  fail "the refusal does not name the parameters: $(cat "$dir/sbatch.err")"
pass "malformed --memwatch-params refused: $(grep -o 'memwatch:.*' "$dir/sbatch.err" | head -1)"

# ---- a hung daemon, then none: jobs go through unchanged, within the hard limit (timeout_s=3)
submit_unchanged() {  # submit_unchanged WHAT MESSAGE: sbatch in time, no --mem set, MESSAGE said
  local started=$SECONDS job
  job=$(sbatch --parsable --memwatch=unet3d-train --memwatch-params batch=16 \
    -o "$dir/job-$1.out" -e "$dir/job-$1.err" "$dir/job.sh" 16 2>"$dir/sbatch.err") ||
    fail "$1: the job was refused: $(cat "$dir/sbatch.err")"
  local took=$((SECONDS - started))
  [ "$took" -le 5 ] || fail "$1: sbatch took ${took} s"
  [ "$(job_field "${job%%;*}" MinMemoryNode)" = 0 ] ||
    fail "$1: the job's request was changed: $(scontrol show job -o "$job")"
  grep -q "$2" "$dir/sbatch.err" || fail "$1: sbatch did not say '$2': $(cat "$dir/sbatch.err")"
  pass "$1: accepted unchanged in ${took} s ($(grep -o 'memwatch:.*' "$dir/sbatch.err" || echo 'no message'))"
  last_job=${job%%;*}
}
settings fill
kill -STOP "$daemon_pid"
submit_unchanged "daemon hung" "memwatch: no answer from memwatchd within 1500 ms"
kill -CONT "$daemon_pid"
wait_done "$last_job"
kill "$daemon_pid"
wait "$daemon_pid" || true
daemon_pid=""
submit_unchanged "daemon stopped" "memwatch: memwatchd is not running at $MEMWATCH_QUERY"
wait_done "$last_job"
lines=$(grep -c . "$dir/job-daemon stopped.err" || true)
grep -q "^memwatch: memwatchd at $ingest cannot be reached from " "$dir/job-daemon stopped.err" &&
  [ "$lines" = 1 ] || fail "the job's stderr: $(cat "$dir/job-daemon stopped.err")"
grep -qx 'preload=none' "$dir/job-daemon stopped.out" &&
  grep -q '"peak":16' "$dir/job-daemon stopped.out" ||
  fail "the job did not run, or not without the shim: $(cat "$dir/job-daemon stopped.out")"
pass "a job on a node without the daemon runs unchanged, one line in its stderr"

failed=0
echo "PASS"
