#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# run.sh — layer 1: run a job, then make its results safe and destroy this instance.
#
#   run.sh <command> [args...]        e.g.  run.sh python train.py --epochs 3
#
# Whatever ends the job (success, error, Ctrl-C, SIGTERM, SIGHUP), the exit path runs, in
# this order:
#   1. push results: PUSH_CMD (a shell command line, run with bash -c; RUN_STATUS holds the
#      job's exit status; limited to PUSH_TIMEOUT seconds, default 1800). Unset = nothing to
#      push. A push that fails keeps the instance: no destroy, KEEP_FILE is touched so that
#      idle-watch holds off for its 60 minutes too, and notify + /fail say so.
#   2. notify NOTIFY_URL with the exit status and what happens next;
#   3. ping HEARTBEAT_URL/<host>/<exit status>;
#   4. destroy this instance (after /bye), unless KEEP_ALIVE=1. DRY_RUN=1 only says what it
#      would destroy. A failed destroy sends /fail and a notify: idle-watch, the heartbeat
#      watcher and the reaper take over from there.
# run.sh exits with the job's status (128 + signal number when a signal stopped it). On a
# signal the job gets SIGTERM, then SIGKILL after JOB_STOP_GRACE seconds (default 10). No
# command at all is an error (status 2) and takes the same exit path.
set -u

KIT_NAME=run.sh
KIT_CHILD=""
KEEP_FILE=${KEEP_FILE:-/workspace/.keep}
PUSH_TIMEOUT=${PUSH_TIMEOUT:-1800}

# The exit path. Its first statement takes the exit status, before anything can change it.
kit_exit_path() {
    local status=$? pushed=1 push_note="" next
    trap '' INT TERM HUP
    if ! declare -F kit_destroy_self >/dev/null; then
        echo "run.sh: common.sh did not load: cannot push, notify or destroy; idle-watch and the reaper take over" >&2
        exit "$status"
    fi
    kit_log "job ended with status $status$(kit_signal_note "$status")"

    push_note=$(kit_push_results "$status") || pushed=0
    if [ "$pushed" = 0 ]; then
        next="KEEPING this instance: $push_note. Results are only on this instance; idle-watch holds it for 60 min ($KEEP_FILE touched)"
        touch "$KEEP_FILE" 2>/dev/null || kit_log "cannot touch $KEEP_FILE"
    elif [ "${KEEP_ALIVE:-0}" = 1 ]; then
        next="$push_note; KEEP_ALIVE=1: keeping this instance"
    elif [ "${DRY_RUN:-0}" = 1 ]; then
        next="$push_note; DRY_RUN=1: not destroying this instance"
    else
        next="$push_note; destroying this instance"
    fi
    kit_notify "run.sh: job exited with status $status$(kit_signal_note "$status"); $next"
    kit_ping "$status" "run.sh: job exited with status $status"

    if [ "$pushed" = 0 ]; then
        kit_ping fail "run.sh: push failed; instance kept"
    elif [ "${KEEP_ALIVE:-0}" != 1 ]; then
        kit_destroy_and_report
    fi
    exit "$status"
}

kit_signal_note() {
    case $1 in
    129) echo " (SIGHUP)" ;;
    130) echo " (SIGINT)" ;;
    143) echo " (SIGTERM)" ;;
    esac
}

# Runs PUSH_CMD; prints one line saying how it went; non-zero when the results are not safe.
kit_push_results() {
    local status=$1 rc
    if [ -z "${PUSH_CMD:-}" ]; then
        echo "nothing to push (PUSH_CMD unset)"
        return 0
    fi
    kit_log "pushing results (PUSH_CMD, at most ${PUSH_TIMEOUT}s)"
    RUN_STATUS=$status kit_timeout "$PUSH_TIMEOUT" bash -c "$PUSH_CMD" </dev/null >&2
    rc=$?
    if [ "$rc" = 0 ]; then
        echo "results pushed"
        return 0
    fi
    if [ "$rc" = 124 ]; then
        echo "push FAILED (timed out after ${PUSH_TIMEOUT}s)"
    else
        echo "push FAILED (PUSH_CMD exited $rc)"
    fi
    return 1
}

kit_destroy_and_report() {
    if [ "${DRY_RUN:-0}" != 1 ]; then
        kit_ping bye "run.sh: destroying this instance"
    fi
    if kit_destroy_self; then
        kit_log "$KIT_DESTROY_MSG"
        return 0
    fi
    kit_log "$KIT_DESTROY_MSG"
    kit_ping fail "run.sh: destroy failed: $KIT_DESTROY_MSG"
    kit_notify "run.sh: $KIT_DESTROY_MSG. The instance is still running (and billing): idle-watch, the heartbeat watch and the reaper take over"
    return 1
}

# A signal stops the job (SIGTERM, then SIGKILL after the grace), then the exit path runs
# with status 128 + the signal number.
kit_on_signal() {
    local name=$1 status=$2 grace tenths i
    trap '' INT TERM HUP
    if [ -n "$KIT_CHILD" ] && kill -0 "$KIT_CHILD" 2>/dev/null; then
        grace=${JOB_STOP_GRACE:-10}
        [[ $grace =~ ^[0-9]{1,4}$ ]] || grace=10
        kit_log "SIG$name: stopping the job (SIGTERM, SIGKILL after ${grace}s)"
        kill -TERM "$KIT_CHILD" 2>/dev/null
        tenths=$((10#$grace * 10))
        for ((i = 0; i < tenths; i++)); do
            kill -0 "$KIT_CHILD" 2>/dev/null || break
            sleep 0.1 2>/dev/null || sleep 1
        done
        kill -KILL "$KIT_CHILD" 2>/dev/null
        wait "$KIT_CHILD" 2>/dev/null
    fi
    exit "$status"
}

trap 'kit_exit_path' EXIT
trap 'kit_on_signal HUP 129' HUP
trap 'kit_on_signal INT 130' INT
trap 'kit_on_signal TERM 143' TERM

KIT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
# shellcheck source=common.sh
. "$KIT_DIR/common.sh" || exit 1

PUSH_TIMEOUT=$(kit_int_setting PUSH_TIMEOUT 1800 1 86400)

if [ "$#" -eq 0 ]; then
    kit_log "usage: run.sh <command> [args...]"
    exit 2
fi

kit_ping start "run.sh: job started"
# The job runs in the background so that a signal reaches this script at once (bash defers
# traps while a foreground child runs); stdin is passed on explicitly.
"$@" 0<&0 &
KIT_CHILD=$!
wait "$KIT_CHILD"
# The script ends here with the job's status, which the EXIT trap takes.
