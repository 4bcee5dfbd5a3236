"""Shell templates behind `pairrl.slurm.render`; `@NAME@` marks a value the renderer fills.

Kept apart from the renderer so the scripts read as shell. Values are shell-quoted by the
renderer; everything here that starts with `$` is expanded by the shell at run time.
"""

from __future__ import annotations

import re

__all__ = [
    "EVAL_MERGE",
    "EVAL_SERVER",
    "EVAL_SERVER_STOP",
    "EVAL_SHARDS",
    "SHARD_ENDPOINT",
    "TRAIN_BATCH",
    "TRAIN_NODE",
    "fill",
]

_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


def fill(template: str, **values: str) -> str:
    """Replace every `@NAME@` in `template`; a placeholder without a value is an error.

    >>> fill("a=@A@", A="1")
    'a=1'
    """
    missing = sorted({m for m in _PLACEHOLDER.findall(template) if m not in values})
    if missing:
        raise KeyError(f"template placeholders without a value: {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


TRAIN_BATCH = """#!/bin/bash
# PairRL training, rendered by `pairrl slurm render`. Review it, then submit with sbatch.
@HEADER@
set -euo pipefail

@SETUP@
LOG_DIR=@LOG_DIR@
CHECKPOINT_DIR=@CHECKPOINT_DIR@
NODE_SCRIPT=@NODE_SCRIPT@
mkdir -p "$LOG_DIR"
log() { echo "[pairrl-slurm $(date -u +%H:%M:%S)] $*"; }

# NCCL: fail fast instead of hanging when a rank dies; one timeout for every collective.
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
export TORCH_NCCL_BLOCKING_WAIT=0
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
# Collectives time out after TRL's ddp_timeout (30 min by default); the vLLM server has
# @SERVER_WAIT_S@ s to answer /health/ before the job gives up.
@NCCL_IFNAME@

# Node roles, by position in the allocation (scontrol lists it in the same order on every node).
mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
if ((${#NODES[@]} != @NODES@)); then
	log "expected @NODES@ nodes, got ${#NODES[@]}: ${NODES[*]}"
	exit 2
fi
SERVER_MODE=@SERVER_MODE@
if ((SERVER_MODE)); then
	VLLM_HOST="${NODES[-1]}"                  # the last node serves vLLM ...
	TRAIN_NODES="${NODES[*]:0:${#NODES[@]}-1}" # ... and is never a training rank
else
	VLLM_HOST=""
	TRAIN_NODES="${NODES[*]}"
fi
read -r -a TRAIN_NODE_ARRAY <<<"$TRAIN_NODES"
MAIN_NODE="${TRAIN_NODE_ARRAY[0]}"
# The rendezvous address: the first training node's IPv4 address (its name if unresolvable).
MAIN_ADDR="$(getent ahostsv4 "$MAIN_NODE" | awk 'NR == 1 {print $1}' || true)"
MAIN_ADDR="${MAIN_ADDR:-$MAIN_NODE}"
RDZV_PORT=@RDZV_PORT@
VLLM_PORT=@VLLM_PORT@
export VLLM_HOST VLLM_PORT TRAIN_NODES MAIN_ADDR RDZV_PORT
log "job $SLURM_JOB_ID restart ${SLURM_RESTART_COUNT:-0}: train nodes [$TRAIN_NODES] rendezvous $MAIN_ADDR:$RDZV_PORT vllm [${VLLM_HOST:-none}]"

# Resume whenever a checkpoint exists (a requeued or resubmitted job continues, never restarts).
PAIRRL_RESUME=""
if compgen -G "$CHECKPOINT_DIR/checkpoint-*" >/dev/null; then
	PAIRRL_RESUME="--resume"
	log "checkpoint found in $CHECKPOINT_DIR: resuming"
fi
export PAIRRL_RESUME

# Time limit (SIGUSR1, --signal) or preemption/scancel (SIGTERM): ask the trainer to
# checkpoint and stop, then requeue on the time limit (Slurm requeues preempted jobs itself).
STOP_REASON=""
TRAIN_PID=""
VLLM_PID=""
request_stop() {
	STOP_REASON="$1"
	[[ -n "$TRAIN_PID" ]] || return 0
	log "$1: asking the trainer to checkpoint and stop (SIGTERM to every training process)"
	# Not `kill $TRAIN_PID`: srun answers SIGTERM by killing its step outright (SIGKILL).
	local step
	step="$(squeue -h --steps -j "$SLURM_JOB_ID" -o '%i %j' | awk '$2 == "pairrl-train" {print $1}')"
	if [[ -n "$step" ]]; then
		scancel --signal=TERM "$step"
	else
		kill -TERM "$TRAIN_PID" 2>/dev/null || true
	fi
}
trap 'request_stop time_limit' USR1
trap 'request_stop terminated' TERM
stop_server() {
	if [[ -n "$VLLM_PID" ]]; then
		kill -TERM "$VLLM_PID" 2>/dev/null || true
		wait "$VLLM_PID" 2>/dev/null || true
	fi
}
trap stop_server EXIT

if ((SERVER_MODE)); then
	srun --nodes=1 --ntasks=1 --nodelist="$VLLM_HOST" --cpus-per-task=@CPUS@ @STEP_GPUS@\\
		--job-name=pairrl-vllm --output="$LOG_DIR/vllm-%j-%N.log" \\
		@VLLM_CMD@ &
	VLLM_PID=$!
	deadline=$((SECONDS + @SERVER_WAIT_S@))
	until curl --silent --fail --max-time 5 "http://$VLLM_HOST:$VLLM_PORT/health/" >/dev/null; do
		if ! kill -0 "$VLLM_PID" 2>/dev/null; then
			log "the vLLM server exited before answering; see $LOG_DIR/vllm-$SLURM_JOB_ID-*.log"
			exit 3
		fi
		if ((SECONDS >= deadline)); then
			log "the vLLM server did not answer in @SERVER_WAIT_S@ s"
			exit 3
		fi
		sleep 10
	done
	log "vLLM server up at http://$VLLM_HOST:$VLLM_PORT"
fi

# One task per training node; each runs the node launcher, which finds its own rank.
TRAIN_RC=0
if [[ -n "$STOP_REASON" ]]; then
	log "stopping before training started ($STOP_REASON)"
else
	srun --nodes="${#TRAIN_NODE_ARRAY[@]}" --ntasks-per-node=1 --nodelist="${TRAIN_NODES// /,}" \\
		--job-name=pairrl-train --cpus-per-task=@CPUS@ @STEP_GPUS@--kill-on-bad-exit=1 \\
		--output="$LOG_DIR/train-%j-%N.log" \\
		bash "$NODE_SCRIPT" &
	TRAIN_PID=$!
	set +e
	wait "$TRAIN_PID"
	TRAIN_RC=$?
	while kill -0 "$TRAIN_PID" 2>/dev/null; do # a trapped signal interrupts wait: wait again
		wait "$TRAIN_PID"
		TRAIN_RC=$?
	done
	set -e
fi
log "trainer exited with $TRAIN_RC"
stop_server
if [[ "$STOP_REASON" == time_limit ]]; then
	if ((${SLURM_RESTART_COUNT:-0} >= @MAX_REQUEUES@)); then
		log "not requeueing: already restarted ${SLURM_RESTART_COUNT:-0} times (limit @MAX_REQUEUES@)"
		exit 4
	fi
	log "requeueing job $SLURM_JOB_ID; it will resume from the last checkpoint"
	scontrol requeue "$SLURM_JOB_ID"
	exit 0
fi
exit "$TRAIN_RC"
"""

TRAIN_NODE = """#!/bin/bash
# Runs once per training node (srun task). Written by `pairrl slurm render`.
set -euo pipefail
# This node's rank among the training nodes, by name, so that rank 0 is the rendezvous host.
MACHINE_RANK=-1
i=0
for node in $TRAIN_NODES; do
	if [[ "$node" == "$SLURMD_NODENAME" ]]; then MACHINE_RANK=$i; fi
	i=$((i + 1))
done
if ((MACHINE_RANK < 0)); then
	echo "node $SLURMD_NODENAME is not a training node ($TRAIN_NODES)" >&2
	exit 2
fi
echo "[pairrl-slurm] node $SLURMD_NODENAME machine_rank $MACHINE_RANK rendezvous $MAIN_ADDR:$RDZV_PORT"
exec @LAUNCHER@ @TRAINER_ARGS@ $PAIRRL_RESUME
"""

EVAL_SHARDS = """#!/bin/bash
# PairRL evaluation shards, rendered by `pairrl slurm render --job eval`.
@HEADER@
set -euo pipefail

@SETUP@
SHARD="${SLURM_ARRAY_TASK_ID:?run this as an array job}/@SHARDS@"
echo "[pairrl-slurm] job ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}: shard $SHARD"
@ENDPOINT@exec "$PAIRRL_BIN" @EVAL_ARGS@ @ENDPOINT_ARGS@--shard "$SHARD"
"""

# Shard lines when the shards sample from the evaluation's own vLLM server job.
SHARD_ENDPOINT = """SERVER_DIR=@SERVER_DIR@
deadline=$((SECONDS + @SERVER_WAIT_S@))
until [[ -s "$SERVER_DIR/endpoint" ]]; do # written by the server job once it answers
	if ((SECONDS >= deadline)); then
		echo "[pairrl-slurm] no vLLM endpoint in $SERVER_DIR after @SERVER_WAIT_S@ s" >&2
		exit 3
	fi
	sleep 2
done
ENDPOINT="$(cat "$SERVER_DIR/endpoint")"
echo "[pairrl-slurm] sampling from the vLLM server at $ENDPOINT"
"""

EVAL_SERVER = """#!/bin/bash
# The vLLM server of a sharded evaluation, rendered by `pairrl slurm render`. It serves
# until the stop job cancels it (once every shard has ended) or its time limit.
@HEADER@
set -euo pipefail

@SETUP@
PAIRRL_PYTHON="$(dirname "$PAIRRL_BIN")/python"
SERVER_DIR=@SERVER_DIR@
PORT=@PORT@
HOST="${SLURMD_NODENAME:-$(hostname)}"
mkdir -p "$SERVER_DIR"
rm -f "$SERVER_DIR/endpoint"
echo "$SLURM_JOB_ID" >"$SERVER_DIR/job_id"
log() { echo "[pairrl-slurm $(date -u +%H:%M:%S)] $*"; }
# vLLM's CPU build: a KV cache size (else it reserves 92% of RAM) and the job's own cores.
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-@KVCACHE_GIB@}"
export VLLM_CPU_NUM_OF_RESERVED_CPU="${VLLM_CPU_NUM_OF_RESERVED_CPU:-0}"
if [[ -z "${VLLM_CPU_OMP_THREADS_BIND:-}" ]]; then
	VLLM_CPU_OMP_THREADS_BIND="$(taskset -pc $$ 2>/dev/null | awk -F': ' '{print $2}')"
	export VLLM_CPU_OMP_THREADS_BIND="${VLLM_CPU_OMP_THREADS_BIND:-auto}"
fi

# A session of its own, stopped by process group: after a kill, vLLM's engine-core and
# worker processes outlive the API process.
setsid @SERVER_CMD@ &
SERVER_PID=$!
stop() {
	rm -f "$SERVER_DIR/endpoint"
	kill -TERM -- "-$SERVER_PID" 2>/dev/null || return 0
	log "stopping the vLLM server"
	for _ in $(seq 20); do
		kill -0 -- "-$SERVER_PID" 2>/dev/null || return 0
		sleep 0.2
	done
	kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
}
trap 'stop; exit 0' TERM INT
trap stop EXIT
deadline=$((SECONDS + @SERVER_WAIT_S@))
until "$PAIRRL_PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' \
	"http://127.0.0.1:$PORT/health" 2>/dev/null; do
	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		log "the vLLM server exited before answering"
		exit 3
	fi
	if ((SECONDS >= deadline)); then
		log "the vLLM server did not answer in @SERVER_WAIT_S@ s"
		exit 3
	fi
	sleep 2
done
echo "http://$HOST:$PORT/v1" >"$SERVER_DIR/endpoint.tmp"
mv "$SERVER_DIR/endpoint.tmp" "$SERVER_DIR/endpoint"
log "vLLM server up at http://$HOST:$PORT/v1"
wait "$SERVER_PID"
"""

EVAL_SERVER_STOP = """#!/bin/bash
# Stops the evaluation's vLLM server job; submitted with --dependency=afterany on the shards.
@HEADER@
set -euo pipefail

job="$(cat @SERVER_DIR@/job_id 2>/dev/null || true)"
if [[ -n "$job" ]]; then
	scancel "$job"
	echo "[pairrl-slurm] cancelled the vLLM server job $job"
fi
"""

EVAL_MERGE = """#!/bin/bash
# PairRL evaluation merge; submitted with --dependency=afterok on the shard array.
@HEADER@
set -euo pipefail

@SETUP@
exec "$PAIRRL_BIN" @MERGE_ARGS@
"""
