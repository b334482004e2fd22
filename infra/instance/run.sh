#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# run.sh — layer 1: run a job, then make its results safe and destroy this instance.
#
#   run.sh <command> [args...]        e.g.  run.sh python train.py --epochs 3
#
# Whatever ends the job (success, error, Ctrl-C, SIGTERM, SIGHUP), the exit path runs, in
# this order:
#   1. WAIT_FOR (when set): the job's output counts as finished only when every file it
#      names (a whitespace- or colon-separated list; each may be a glob) exists, its size is
#      the same at two polls CHECK_EVERY seconds apart and its mtime is at least STABLE_FOR
#      seconds old (60) — never a line in a log. Not finished within WAIT_TIMEOUT seconds
#      (3600): a notify says what is missing or still changing and run.sh leaves the save
#      and the destroy to idle-watch's rules.
#   2. save the results (kit_save_results, the same code idle-watch runs before its
#      destroy): PUSH_CMD when set (RUN_STATUS holds the job's exit status), then RESULTS_DIR
#      to RESULTS_URL with a manifest, verified by reading back what the store holds. Each
#      step is limited to PUSH_TIMEOUT seconds (1800). Results that are not safe keep the
#      instance: no destroy, KEEP_FILE (or, where it cannot be written, a fallback under
#      TMPDIR that idle-watch reads too) is touched so that idle-watch holds off for its 60
#      minutes, and the notify and one failure ping say which files and why.
#   3. unless KEEP_ALIVE=1 or the kit has no way to destroy (no identity, no key: said, never
#      announced as a destroy), one plain ping that asks for JSON: an instance kept from
#      outside (reaper keep, the status page, the phone) is not destroyed;
#   4. one notify to NOTIFY_URL/<host> whose title names the host and the outcome ("job done,
#      results saved, destroying", "job FAILED (exit 3), ..."), with the exit status, what
#      was saved where, and what happens next;
#   5. ping HEARTBEAT_URL/<host>/<exit status> (when a failure kept the instance: the exit
#      status if it is one, else /fail — one ping, right after the notify that said it);
#   6. destroy this instance (after /bye). DRY_RUN=1 only says what it would save and
#      destroy. A failed destroy sends a notify and /fail: idle-watch, the heartbeat watcher
#      and the reaper take over from there.
# run.sh exits with the job's status (128 + signal number when a signal stopped it). On a
# signal the job gets SIGTERM, then SIGKILL after JOB_STOP_GRACE seconds (default 10). No
# command at all is an error (status 2) and takes the same exit path.
set -u

KIT_NAME=run.sh
KIT_CHILD=""
WAIT_NOTE=""

# The exit path. Its first statement takes the exit status, before anything can change it.
# Every outcome is one notify whose title names the host and what happened, then one ping
# with the exit status (a failure ping right after the notify: the guard sends no second
# alert for it).
kit_exit_path() {
    local status=$? job level ended saved=""
    trap '' INT TERM HUP
    if ! declare -F kit_destroy_self >/dev/null; then
        echo "run.sh: common.sh did not load: cannot push, notify or destroy; idle-watch and the reaper take over" >&2
        exit "$status"
    fi
    kit_identify
    job=$(kit_job_outcome "$status")
    level=info
    [ "$status" = 0 ] || level=warning
    ended="run.sh: job exited with status $status$(kit_signal_note "$status")"
    kit_log "job ended with status $status$(kit_signal_note "$status")"

    if [ -n "${WAIT_FOR:-}" ] && ! kit_wait_for_outputs; then
        kit_notify warning "$job, output not complete, left to idle-watch" \
            "$ended; $WAIT_NOTE. Not saving or destroying: idle-watch saves the results and destroys by its own rules"
        kit_ping "$status" "$ended; WAIT_FOR not complete"
        exit "$status"
    fi

    if ! kit_save_results "$status"; then
        kit_hold
        kit_notify critical "$job, results NOT safe, instance KEPT" \
            "$ended; $KIT_SAVE_NOTE. The results are only on this instance, which keeps billing; $KIT_HOLD_NOTE"
        kit_ping_outcome "$status" "$ended; results not safe, instance kept: $KIT_SAVE_NOTE"
        exit "$status"
    fi
    [ "$KIT_SAVE_STATE" = none ] || saved="results saved, "
    if [ "${KEEP_ALIVE:-0}" = 1 ]; then
        kit_notify "$level" "$job, ${saved}instance kept (KEEP_ALIVE=1)" "$ended; $KIT_SAVE_NOTE; KEEP_ALIVE=1: keeping this instance"
        kit_ping "$status" "$ended"
        exit "$status"
    fi
    if ! kit_release_ready destroy; then
        kit_notify critical "$job, CANNOT destroy, still billing" \
            "$ended; $KIT_SAVE_NOTE; $KIT_DESTROY_MSG. idle-watch, the heartbeat watch and the reaper take over"
        kit_ping_outcome "$status" "$ended; cannot destroy: $KIT_DESTROY_MSG"
        exit "$status"
    fi
    # A keep set from outside (reaper keep, the status page, the phone) spares the instance.
    kit_ping_read "$ended; asking for a keep before destroying"
    if [ "$KIT_ANSWER" = ok ] && [ -n "$KIT_KEEP_MS" ]; then
        kit_notify "$level" "$job, ${saved}kept $KIT_KEEP_TEXT" \
            "$ended; $KIT_SAVE_NOTE; kept from outside (reaper keep, the status page or the phone) $KIT_KEEP_TEXT: not destroying"
        kit_ping "$status" "$ended; kept $KIT_KEEP_TEXT"
        exit "$status"
    fi
    if [ "${DRY_RUN:-0}" = 1 ]; then
        kit_release_self destroy
        kit_log "$KIT_DESTROY_MSG"
        kit_notify "$level" "$job, ${saved}would destroy (dry run)" \
            "$ended; $KIT_SAVE_NOTE; DRY_RUN=1: not destroying this instance; it ${KIT_DESTROY_MSG#dry run: }"
        kit_ping "$status" "$ended"
        exit "$status"
    fi
    kit_notify "$level" "$job, ${saved}destroying" "$ended; $KIT_SAVE_NOTE; destroying this instance"
    kit_ping "$status" "$ended"
    kit_destroy_and_report
    exit "$status"
}

# What became of the job, for a title: "job done", "job FAILED (exit 3)", "job stopped by
# SIGTERM (exit 143)".
kit_job_outcome() {
    local note
    note=$(kit_signal_note "$1")
    if [ "$1" = 0 ]; then
        echo "job done"
    elif [ -n "$note" ]; then
        echo "job stopped by ${note:2:-1} (exit $1)"
    else
        echo "job FAILED (exit $1)"
    fi
}

kit_signal_note() {
    case $1 in
    129) echo " (SIGHUP)" ;;
    130) echo " (SIGINT)" ;;
    143) echo " (SIGTERM)" ;;
    esac
}

# One ping for an outcome that needs a person: the exit status when it is itself a failure,
# else /fail — never both, and never an "ok" before a failure.
kit_ping_outcome() {
    if [ "$1" = 0 ]; then
        kit_ping fail "$2"
    else
        kit_ping "$1" "$2"
    fi
}

# WAIT_FOR: waits until every file it names is complete (exists, the same size at two polls
# CHECK_EVERY apart, mtime at least STABLE_FOR old), at most WAIT_TIMEOUT. Sets WAIT_NOTE;
# returns 1 on the timeout.
kit_wait_for_outputs() {
    local every_ms stable_ms timeout_ms started now line size mtime pattern f old_glob
    local -a patterns files pending
    local -A before=() seen=()
    every_ms=$(kit_ms_setting CHECK_EVERY 60 1)
    stable_ms=$(kit_ms_setting STABLE_FOR 60 0)
    timeout_ms=$(kit_ms_setting WAIT_TIMEOUT 3600 1)
    IFS=$' \t\n:' read -r -d '' -a files <<<"$WAIT_FOR"
    patterns=()
    for f in "${files[@]}"; do
        [ -z "$f" ] || patterns+=("$f")
    done
    started=$(kit_now_ms)
    kit_log "waiting for WAIT_FOR (${#patterns[@]} names; stable for $((stable_ms / 1000))s, at most $((timeout_ms / 1000))s)"
    while :; do
        now=$(kit_now_ms)
        pending=()
        seen=()
        for pattern in "${patterns[@]}"; do
            files=("$pattern")
            if [[ $pattern == *[*?[]* ]]; then
                old_glob=$(shopt -p nullglob)
                shopt -s nullglob
                # shellcheck disable=SC2206  # the glob is meant to expand here
                files=($pattern)
                eval "$old_glob"
                if ((${#files[@]} == 0)); then
                    pending+=("$pattern (nothing matches)")
                    continue
                fi
            fi
            for f in "${files[@]}"; do
                line=$(find "$f" -maxdepth 0 -type f -printf '%s %T@' 2>/dev/null)
                if [ -z "$line" ]; then
                    pending+=("$f (missing)")
                    continue
                fi
                size=${line%% *}
                mtime=$(kit_epoch_ms "${line#* }")
                seen[$f]=$size
                if [ "${before[$f]:-}" != "$size" ]; then
                    pending+=("$f (${size} bytes, still changing)")
                elif ((now - mtime < stable_ms)); then
                    pending+=("$f (written $(((now - mtime) / 1000))s ago)")
                fi
            done
        done
        if ((${#pending[@]} == 0)); then
            WAIT_NOTE="WAIT_FOR complete (${#seen[@]} files)"
            kit_log "$WAIT_NOTE"
            return 0
        fi
        if ((now - started >= timeout_ms)); then
            WAIT_NOTE="WAIT_FOR not complete after $((timeout_ms / 1000))s (WAIT_TIMEOUT): $(kit_join 5 "${pending[@]}")"
            return 1
        fi
        before=()
        for f in "${!seen[@]}"; do
            before[$f]=${seen[$f]}
        done
        kit_log "waiting for WAIT_FOR: $(kit_join 3 "${pending[@]}")"
        sleep "$(kit_ms_seconds "$every_ms")"
    done
}

# The first $1 of the other arguments, comma-separated, and how many more there are.
kit_join() {
    local limit=$1 out="" i=0 item
    shift
    for item in "$@"; do
        ((i < limit)) && out="$out${out:+, }$item"
        i=$((i + 1))
    done
    ((i > limit)) && out="$out and $((i - limit)) more"
    printf '%s\n' "$out"
}

kit_destroy_and_report() {
    kit_ping bye "run.sh: destroying this instance"
    if kit_destroy_self; then
        kit_log "$KIT_DESTROY_MSG"
        return 0
    fi
    kit_log "$KIT_DESTROY_MSG"
    kit_notify critical "destroy FAILED, still billing" \
        "run.sh: $KIT_DESTROY_MSG. The instance is still running (and billing): idle-watch, the heartbeat watch and the reaper take over"
    kit_ping fail "run.sh: destroy failed: $KIT_DESTROY_MSG"
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
