#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests and CI.
#
#   slurm/local_cluster.sh start    # munged (as the munge user), slurmctld, slurmd -N localhost
#   slurm/local_cluster.sh status   # which daemons run, sinfo, squeue; exit 0 only if all three run
#   slurm/local_cluster.sh env      # prints `export SLURM_CONF=...` for sbatch/squeue/scontrol
#   slurm/local_cluster.sh stop     # cancels jobs, stops the daemons by PID, checks none is left
#
# It installs nothing. It needs root and the Debian packages
#   apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge
# Everything it writes (munge key and socket, slurm.conf, state, spool, logs, pid files)
# lives under one state directory, $PAIRRL_SLURM_STATE (default /tmp/pairrl-slurm), so it
# neither needs nor touches a system-wide munge or Slurm configuration. Its own ports
# ($PAIRRL_SLURM_CTLD_PORT, $PAIRRL_SLURM_D_PORT) keep it apart from a system slurm.
set -euo pipefail

STATE_DIR="${PAIRRL_SLURM_STATE:-/tmp/pairrl-slurm}"
CTLD_PORT="${PAIRRL_SLURM_CTLD_PORT:-16817}"
SLURMD_PORT="${PAIRRL_SLURM_D_PORT:-16818}"
NODE_NAME=localhost # slurmd is started with -N localhost: the hostname may be anything
START_TIMEOUT_S="${PAIRRL_SLURM_START_TIMEOUT:-60}"

MUNGE_DIR="$STATE_DIR/munge"
MUNGE_SOCKET="$MUNGE_DIR/munge.socket"
MUNGE_PID="$MUNGE_DIR/munged.pid"
SLURM_CONF_PATH="$STATE_DIR/slurm.conf"
CTLD_PID="$STATE_DIR/run/slurmctld.pid"
SLURMD_PID="$STATE_DIR/run/slurmd.pid"
LOG_DIR="$STATE_DIR/log"

die() {
	echo "local_cluster: $*" >&2
	exit 1
}

# Echo the PID recorded in pid file $1 if that process is alive, else nothing.
live_pid() {
	local pid_file="$1" pid
	[[ -s "$pid_file" ]] || return 0
	pid="$(tr -dc '0-9' <"$pid_file")"
	if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
		echo "$pid"
	fi
}

require_tools() {
	local missing=()
	local tool
	for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo scancel runuser; do
		command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
	done
	if ((${#missing[@]})); then
		die "missing ${missing[*]}; install them with: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
	fi
	[[ "$(id -u)" == 0 ]] || die "must run as root (munged is started as the munge user, slurmd needs root)"
	id munge >/dev/null 2>&1 || die "no 'munge' user; the Debian 'munge' package creates it"
}

# CPUs and real memory (MB) as slurmd measures them, so the node is not drained for
# "Low RealMemory" and gets every core (not `nproc`, which obeys OMP_NUM_THREADS).
node_hardware() {
	slurmd -C 2>/dev/null | sed -n "s/.*[[:space:]]$1=\([0-9]*\).*/\1/p"
}

write_slurm_conf() {
	local cpus mem
	cpus="$(node_hardware CPUs)"
	mem="$(node_hardware RealMemory)"
	[[ -n "$cpus" && -n "$mem" ]] || die "slurmd -C did not report CPUs and RealMemory"
	cat >"$SLURM_CONF_PATH" <<EOF
# Written by slurm/local_cluster.sh; a one-node cluster for tests. Do not edit: it is rewritten.
ClusterName=pairrl-local
SlurmctldHost=${NODE_NAME}(127.0.0.1)
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${MUNGE_SOCKET}
StateSaveLocation=${STATE_DIR}/ctld
SlurmdSpoolDir=${STATE_DIR}/spool/slurmd-%n
SlurmctldPidFile=${CTLD_PID}
SlurmdPidFile=${SLURMD_PID}
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: they rarely work inside containers, and a test cluster needs no confinement.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
# Finished jobs stay visible to scontrol/squeue for 10 minutes (no accounting database here).
MinJobAge=600
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=${NODE_NAME} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=${NODE_NAME} Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
	if [[ -n "$(live_pid "$MUNGE_PID")" ]]; then
		return 0
	fi
	mkdir -p "$MUNGE_DIR"
	chown munge:munge "$MUNGE_DIR"
	# munged wants its socket dir executable by all (clients connect) and writable only by munge.
	chmod 0755 "$MUNGE_DIR"
	if [[ ! -s "$MUNGE_DIR/munge.key" ]]; then
		runuser -u munge -- mungekey --create --keyfile="$MUNGE_DIR/munge.key"
	fi
	chown munge:munge "$MUNGE_DIR/munge.key"
	chmod 0400 "$MUNGE_DIR/munge.key"
	# munged refuses to run as root; it must be the munge user that owns the key.
	runuser -u munge -- munged \
		--socket="$MUNGE_SOCKET" \
		--key-file="$MUNGE_DIR/munge.key" \
		--pid-file="$MUNGE_PID" \
		--log-file="$MUNGE_DIR/munged.log" \
		--seed-file="$MUNGE_DIR/munged.seed" \
		|| die "munged failed to start; see $MUNGE_DIR/munged.log"
	wait_for "munged socket" 10 test -S "$MUNGE_SOCKET"
	munge --socket="$MUNGE_SOCKET" -n </dev/null | unmunge --socket="$MUNGE_SOCKET" >/dev/null \
		|| die "munge round trip failed; see $MUNGE_DIR/munged.log"
}

# wait_for DESCRIPTION SECONDS COMMAND...: poll COMMAND every 0.5 s until it succeeds.
wait_for() {
	local what="$1" seconds="$2"
	shift 2
	local deadline=$((SECONDS + seconds))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			echo "local_cluster: timed out after ${seconds}s waiting for $what" >&2
			dump_logs
			exit 1
		fi
		sleep 0.5
	done
}

node_is_idle() {
	local state
	state="$(SLURM_CONF="$SLURM_CONF_PATH" sinfo -h -n "$NODE_NAME" -o '%T' 2>/dev/null)"
	[[ "$state" == idle* || "$state" == mixed* || "$state" == allocated* ]]
}

dump_logs() {
	local f
	for f in "$MUNGE_DIR/munged.log" "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log"; do
		if [[ -f "$f" ]]; then
			echo "----- last lines of $f" >&2
			tail -n 20 "$f" >&2
		fi
	done
}

cmd_start() {
	require_tools
	mkdir -p "$STATE_DIR"/{ctld,spool,run,log}
	chmod 0755 "$STATE_DIR"
	start_munge
	if [[ -z "$(live_pid "$CTLD_PID")" ]]; then
		write_slurm_conf
		# -c: start clean, without the jobs of an earlier run of this test cluster.
		slurmctld -c -f "$SLURM_CONF_PATH" || {
			dump_logs
			die "slurmctld failed to start"
		}
	fi
	wait_for "slurmctld to answer" "$START_TIMEOUT_S" env SLURM_CONF="$SLURM_CONF_PATH" scontrol ping
	if [[ -z "$(live_pid "$SLURMD_PID")" ]]; then
		slurmd -f "$SLURM_CONF_PATH" -N "$NODE_NAME" || {
			dump_logs
			die "slurmd failed to start"
		}
	fi
	wait_for "node $NODE_NAME to become idle" "$START_TIMEOUT_S" node_is_idle
	echo "local_cluster: running (munged $(live_pid "$MUNGE_PID"), slurmctld $(live_pid "$CTLD_PID"), slurmd $(live_pid "$SLURMD_PID"))"
	echo "local_cluster: export SLURM_CONF=$SLURM_CONF_PATH"
}

# stop_pid NAME PIDFILE: SIGTERM, wait up to 15 s, then SIGKILL; only the recorded PID.
stop_pid() {
	local name="$1" pid_file="$2" pid i
	pid="$(live_pid "$pid_file")"
	[[ -n "$pid" ]] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 30; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "local_cluster: $name ($pid) ignored SIGTERM; sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.5
	fi
	rm -f "$pid_file"
}

cmd_stop() {
	local i
	if [[ -n "$(live_pid "$CTLD_PID")" ]]; then
		# Cancel every job first so that no slurmstepd outlives slurmd.
		SLURM_CONF="$SLURM_CONF_PATH" scancel --full --partition=debug 2>/dev/null || true
		for ((i = 0; i < 40; i++)); do
			[[ -z "$(SLURM_CONF="$SLURM_CONF_PATH" squeue -h -t all -o '%i %t' 2>/dev/null |
				grep -Ev ' (CD|CA|F|TO|NF|PR|OOM|BF|DL)$' || true)" ]] && break
			sleep 0.5
		done
	fi
	stop_pid slurmd "$SLURMD_PID"
	stop_pid slurmctld "$CTLD_PID"
	stop_pid munged "$MUNGE_PID"
	local left=""
	[[ -z "$(live_pid "$SLURMD_PID")" ]] || left+=" slurmd"
	[[ -z "$(live_pid "$CTLD_PID")" ]] || left+=" slurmctld"
	[[ -z "$(live_pid "$MUNGE_PID")" ]] || left+=" munged"
	[[ -z "$left" ]] || die "still running:$left"
	echo "local_cluster: stopped"
}

cmd_status() {
	local running=0 name pid_file pid
	for name in munged slurmctld slurmd; do
		case "$name" in
		munged) pid_file="$MUNGE_PID" ;;
		slurmctld) pid_file="$CTLD_PID" ;;
		slurmd) pid_file="$SLURMD_PID" ;;
		esac
		pid="$(live_pid "$pid_file")"
		if [[ -n "$pid" ]]; then
			echo "$name: running (pid $pid)"
			running=$((running + 1))
		else
			echo "$name: stopped"
		fi
	done
	if [[ -n "$(live_pid "$CTLD_PID")" ]]; then
		SLURM_CONF="$SLURM_CONF_PATH" sinfo || true
		SLURM_CONF="$SLURM_CONF_PATH" squeue || true
	fi
	echo "SLURM_CONF=$SLURM_CONF_PATH"
	if ((running == 3)); then return 0; fi
	if ((running == 0)); then return 3; fi
	return 1
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
env) echo "export SLURM_CONF=$SLURM_CONF_PATH" ;;
*)
	echo "usage: $0 start|stop|status|env   (state dir: \$PAIRRL_SLURM_STATE, now $STATE_DIR)" >&2
	exit 2
	;;
esac
