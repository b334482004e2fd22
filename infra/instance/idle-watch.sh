#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# idle-watch.sh — layer 2: save the results, then destroy (or stop) this instance after
# IDLE_LIMIT idle minutes.
#
#   nohup bash idle-watch.sh >>/workspace/idle-watch.log 2>&1 &
#
# Every CHECK_EVERY seconds (default 60) it reads the instance; idle means ALL of:
#   - every GPU under UTIL_THRESHOLD % (nvidia-smi; missing, failing or unreadable = busy);
#   - no python process (the command line's program is python, python3, python3.11...;
#     Jupyter's own server and kernels are left to the next check; IDLE_IGNORE_PROCS, an
#     extended regex, names more processes to leave out);
#   - no SSH session active in the last 30 minutes (`who -u`: its idle column is the time
#     since the terminal last saw input; sessions without a terminal, such as `ssh -N` port
#     forwards, do not show there);
#   - where a Jupyter server runs: no kernel busy or active in the last 30 minutes
#     (GET /api/kernels on this machine; no answer = busy). The server is found at
#     JUPYTER_URL, else from its runtime files (jpserver-*.json), else JUPYTER_SERVER_URL,
#     else http://127.0.0.1:$JUPYTER_PORT (8888); JUPYTER_TOKEN is sent when set;
#   - where RESULTS_DIR is set: no file under it written in the last STABLE_FOR seconds (60;
#     a checkpoint being saved is work; symbolic links followed, as the upload follows them;
#     unreadable = busy).
# KEEP_FILE (/workspace/.keep; or run.sh's fallback for it under TMPDIR) younger than 60
# minutes holds it off; an older one is ignored (said once). Any activity resets the idle
# count. Idle time is counted as idle checks x CHECK_EVERY, not by the wall clock: a
# suspended or starved watcher never destroys early.
#
# The two-way heartbeat: each check pings HEARTBEAT_URL/<host> with its status line as the
# body and `Accept: application/json`, and obeys the answer {"ok": true, "keep_until":
# "<ISO>"|null, "idle_after": "<duration>"|"never"|null}: while keep_until is in the future
# (by the answer's Date, not this machine's clock) it does not destroy for idleness (said
# once in the log and once in a notify); idle_after replaces IDLE_LIMIT until it changes,
# "never" turns the idle destroy off. An answer it cannot read changes nothing, and a keep
# read earlier still ends at its keep_until.
#
# The warning (idle_soon, to NOTIFY_URL/<host>, so that a Keep pressed on the phone comes
# back with the next ping) goes out 5 minutes before the limit; a late one (a keep has just
# ended, the limit was lowered) gives the whole 5 minutes. At the limit it first makes the
# results safe exactly as run.sh does (kit_save_results: PUSH_CMD, RESULTS_DIR to
# RESULTS_URL, verified), pinging the heartbeat while it saves; results that are not safe
# keep the instance (a notify says why, /fail only if the notify did not get through; tried
# again at every check). Then it destroys this instance, or stops it with IDLE_ACTION=stop
# (DRY_RUN=1: says "would", once, and watches on), retrying at every check until it works,
# then exits. Nothing but a successful destroy or stop (or IDLE_WATCH_MAX_LOOPS) ends it: no
# error does.
#
# Test hooks: IDLE_WATCH_MAX_LOOPS ends after that many checks; IDLE_WATCH_SLEEP replaces
# the real sleep between checks (CHECK_EVERY still sets how much time a check counts for).
set -u

KIT_NAME='idle-watch'
KIT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
# shellcheck source=common.sh
if ! . "$KIT_DIR/common.sh"; then
    echo "idle-watch: cannot load $KIT_DIR/common.sh" >&2
    exit 1
fi

readonly KEEP_MINUTES=60 SSH_ACTIVE_MINUTES=30 WARN_MINUTES=5 RENOTIFY_EVERY=30
readonly WARN_MS=$((WARN_MINUTES * 60000))
readonly PYTHON_PATTERN='^([^ ]*/)?python[0-9.]*( |$)'
readonly JUPYTER_PATTERN='jupyter-(lab|notebook|server)( |$)|-m (jupyterlab|notebook|jupyter_server)( |$)'

# CHECK_EVERY in milliseconds: seconds with up to 3 decimals, so that tests can use 0.1.
check_every_ms() {
    kit_ms_setting CHECK_EVERY 60 1
}

# "pid command line" of every process whose command line matches $1 (pgrep, else /proc).
list_procs() {
    local pattern=$1 out rc d cmd IFS=' '
    if command -v pgrep >/dev/null 2>&1; then
        out=$(pgrep -a -f "$pattern" 2>/dev/null)
        rc=$?
        case $rc in
        0) printf '%s\n' "$out" ;;
        1) ;;
        *) return 1 ;;
        esac
        return 0
    fi
    local -a args
    for d in /proc/[0-9]*; do
        args=()
        { mapfile -d '' -t args <"$d/cmdline"; } 2>/dev/null || continue
        ((${#args[@]})) || continue
        cmd="${args[*]}"
        [[ $cmd =~ $pattern ]] && printf '%s %s\n' "${d#/proc/}" "$cmd"
    done
    return 0
}

# Sets GPU_TEXT (the busiest GPU's %, or ?) and GPU_BUSY.
read_gpu() {
    local out line v max=-1 unreadable=0
    GPU_BUSY=1
    GPU_TEXT='?'
    command -v nvidia-smi >/dev/null 2>&1 || return 0
    out=$(kit_timeout 15 nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits 2>/dev/null) || return 0
    while IFS= read -r line; do
        v=${line//[[:space:]]/}
        [ -n "$v" ] || continue
        if [[ $v =~ ^[0-9]{1,3}$ ]]; then
            ((10#$v > max)) && max=$((10#$v))
        else
            unreadable=1
        fi
    done <<<"$out"
    if ((max < 0 || unreadable)); then
        return 0
    fi
    GPU_TEXT="$max%"
    ((max < UTIL_THRESHOLD)) && GPU_BUSY=0
    return 0
}

# Sets PY_TEXT (count, or ?) and PY_BUSY.
read_python() {
    local procs count=0 line
    PY_BUSY=1
    PY_TEXT='?'
    procs=$(list_procs "$PYTHON_PATTERN") || return 0
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        [[ $line =~ jupyter|ipykernel ]] && continue
        if [ -n "${IDLE_IGNORE_PROCS:-}" ] && [[ $line =~ $IDLE_IGNORE_PROCS ]]; then
            continue
        fi
        count=$((count + 1))
    done <<<"$procs"
    PY_TEXT=$count
    ((count == 0)) && PY_BUSY=0
    return 0
}

# Minutes since a session's last input from `who -u`'s idle column: "." (under a minute),
# "HH:MM", or "old" (over a day). The column sits just before the PID; an unreadable line
# counts as active.
session_idle_minutes() {
    local -a f
    local i idle
    read -r -a f <<<"$1"
    for ((i = 3; i < ${#f[@]}; i++)); do
        [[ ${f[i]} =~ ^[0-9]+$ ]] || continue
        idle=${f[i - 1]}
        case $idle in
        .) echo 0 && return 0 ;;
        old) echo 100000 && return 0 ;;
        esac
        if [[ $idle =~ ^([0-9]{1,3}):([0-9]{2})$ ]]; then
            echo $((10#${BASH_REMATCH[1]} * 60 + 10#${BASH_REMATCH[2]}))
            return 0
        fi
    done
    echo 0
}

# Sets SSH_TEXT (sessions active in the last 30 minutes) and SSH_BUSY. No `who`, or no
# answer from it: no session is seen (containers without utmp have none to show).
read_ssh() {
    local out line count=0
    out=$(LC_ALL=C who -u 2>/dev/null) || out=""
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        (($(session_idle_minutes "$line") < SSH_ACTIVE_MINUTES)) && count=$((count + 1))
    done <<<"$out"
    SSH_TEXT=$count
    SSH_BUSY=0
    ((count > 0)) && SSH_BUSY=1
    return 0
}

# Asks every candidate Jupyter server on this machine for its kernels; prints none, idle,
# recent, busy, or ? when no candidate answered.
jupyter_kernels_state() {
    local py
    py=$(command -v python3 || command -v python) || {
        echo '?'
        return 0
    }
    kit_timeout 15 "$py" - "$SSH_ACTIVE_MINUTES" 2>/dev/null <<'PY' || echo '?'
import glob, json, os, ssl, sys, urllib.parse, urllib.request
from datetime import datetime, timezone

active_s = int(sys.argv[1]) * 60

def candidates():
    token = os.environ.get("JUPYTER_TOKEN", "")
    if os.environ.get("JUPYTER_URL"):
        yield os.environ["JUPYTER_URL"], token
        return
    dirs = [os.environ.get("JUPYTER_RUNTIME_DIR", ""),
            os.path.expanduser("~/.local/share/jupyter/runtime")]
    for d in filter(None, dirs):
        for f in sorted(glob.glob(os.path.join(d, "*server-*.json"))):
            try:
                info = json.load(open(f))
                yield info["url"], info.get("token") or token
            except Exception:
                pass
    if os.environ.get("JUPYTER_SERVER_URL"):
        yield os.environ["JUPYTER_SERVER_URL"], token
    yield "http://127.0.0.1:%s/" % os.environ.get("JUPYTER_PORT", "8888"), token

def kernels(url, token):
    u = urllib.parse.urlsplit(url)
    local = u._replace(netloc="127.0.0.1" + (":%d" % u.port if u.port else ""))
    base = urllib.parse.urlunsplit(local).rstrip("/")
    req = urllib.request.Request(base + "/api/kernels")
    if token:
        req.add_header("Authorization", "token " + token)
    ctx = ssl._create_unverified_context()  # this machine only; self-signed is normal
    with urllib.request.urlopen(req, timeout=3, context=ctx) as r:
        data = json.load(r)
    if not isinstance(data, list):
        raise ValueError("not a kernel list")
    return data

def state(ks):
    if not ks:
        return "none"
    now = datetime.now(timezone.utc)
    recent = False
    for k in ks:
        if k.get("execution_state") in ("busy", "starting", "restarting"):
            return "busy"
        last = k.get("last_activity")
        if not last:
            return "?"
        seen = datetime.fromisoformat(last.replace("Z", "+00:00"))
        if (now - seen).total_seconds() < active_s:
            recent = True
    return "recent" if recent else "idle"

for url, token in candidates():
    try:
        print(state(kernels(url, token)))
        break
    except Exception:
        continue
else:
    print("?")
PY
}

# Sets JUP_TEXT (none: no server runs; or the kernels' state) and JUP_BUSY.
read_jupyter() {
    local procs
    JUP_BUSY=1
    JUP_TEXT='?'
    procs=$(list_procs "$JUPYTER_PATTERN") || return 0
    if [ -z "$procs" ]; then
        JUP_TEXT=none
        JUP_BUSY=0
        return 0
    fi
    JUP_TEXT=$(jupyter_kernels_state)
    case $JUP_TEXT in
    none | idle) JUP_BUSY=0 ;;
    esac
    return 0
}

# Sets KEEP_TEXT: held (KEEP_FILE, or run.sh's fallback for it, younger than 60 minutes),
# expired, or empty (no file); KEEP_WHICH is the file.
read_keep() {
    local file
    KEEP_TEXT="" KEEP_WHICH=""
    for file in "$KEEP_FILE" "$(kit_keep_fallback)"; do
        [ -e "$file" ] || continue
        KEEP_WHICH=$file
        if [ -n "$(find "$file" -maxdepth 0 -mmin "-$KEEP_MINUTES" 2>/dev/null)" ]; then
            KEEP_TEXT=held
            return 0
        fi
        KEEP_TEXT=expired
    done
    return 0
}

# Sets RES_TEXT (empty without RESULTS_DIR; writing, still, none or ?) and RES_BUSY.
read_results() {
    RES_TEXT=$(kit_results_activity)
    RES_BUSY=0
    case $RES_TEXT in
    writing | '?') RES_BUSY=1 ;;
    esac
    return 0
}

# The instance as one sentence: sets ACTIVITY (keep, busy or idle) and counts idle time.
check_once() {
    read_gpu
    read_python
    read_ssh
    read_jupyter
    read_keep
    read_results

    if [ "$KEEP_TEXT" = expired ]; then
        if [ "$keep_expired_said" = 0 ]; then
            kit_log "$KEEP_WHICH is older than $KEEP_MINUTES minutes: ignored (touch it again to hold $KEEP_MINUTES more)"
            keep_expired_said=1
        fi
    else
        keep_expired_said=0
    fi

    if [ "$KEEP_TEXT" = held ]; then
        ACTIVITY=keep
    elif ((GPU_BUSY || PY_BUSY || SSH_BUSY || JUP_BUSY || RES_BUSY)); then
        ACTIVITY=busy
    else
        ACTIVITY=idle
    fi
    if [ "$ACTIVITY" = idle ]; then
        idle_ms=$((idle_ms + step_ms))
    else
        idle_ms=0 warned=0 released=0 keep_ended=0 destroy_failures=0 save_failures=0
    fi
    return 0
}

# The kit's clock: at each check it moves by CHECK_EVERY or by the time that really passed,
# whichever is more. A keep read from the heartbeat ends by it when no later answer says
# otherwise, so an unreadable answer never stretches a keep past its end.
tick() {
    local now elapsed
    now=$(kit_now_ms)
    elapsed=$((now - wall_ms))
    wall_ms=$now
    ((elapsed > step_ms)) || elapsed=$step_ms
    clock_ms=$((clock_ms + elapsed))
    if [ -n "$keep_end_ms" ] && ((clock_ms >= keep_end_ms)); then
        kit_log "the keep $keep_text has ended"
        keep_end_ms="" keep_ended=1
    fi
}

# The decision from what is known now, changing nothing: STATE (keep, busy, kept, idle, or
# ACTION_ING at the limit), WARN_NOW and PLAN_DUE (the idle time the destroy waits for once
# warned), and the status line. The warning goes out 5 minutes before the limit (at the
# first idle check for a limit under 6 minutes), and the destroy never follows it sooner. A
# warning that comes late — a keep has just ended, or reaper lowered the limit under the idle
# time already counted — gives the whole 5 minutes from then.
plan() {
    local notice limit_text
    WARN_NOW=0 PLAN_DUE=$due_ms
    if [ "$ACTIVITY" != idle ]; then
        STATE=$ACTIVITY
    elif [ -n "$keep_end_ms" ]; then
        STATE=kept
    else
        STATE=idle
    fi
    if [ "$STATE" = idle ] && [ -n "$limit_ms" ] && ((!released)); then
        notice=$((limit_ms - step_ms))
        ((notice < WARN_MS)) || notice=$WARN_MS
        ((notice > 0)) || notice=0
        if ((!warned && idle_ms - step_ms >= limit_ms - notice)); then
            # late: the check before would have warned, had nothing held it back
            WARN_NOW=1 PLAN_DUE=$((idle_ms + WARN_MS))
        elif ((!warned && idle_ms >= limit_ms - notice)); then
            WARN_NOW=1 PLAN_DUE=$((idle_ms + notice))
            ((PLAN_DUE >= limit_ms)) || PLAN_DUE=$limit_ms
        fi
        if ((warned || WARN_NOW)) && ((idle_ms >= PLAN_DUE)); then
            STATE=$ACTION_ING
        fi
    fi
    limit_text=never
    [ -z "$limit_ms" ] || limit_text=$(((limit_ms + 59999) / 60000))
    status_line="$STATE $((idle_ms / 60000))/$limit_text min gpu=$GPU_TEXT py=$PY_TEXT ssh=$SSH_TEXT jupyter=$JUP_TEXT"
    [ -n "$RES_TEXT" ] && status_line="$status_line results=$RES_TEXT"
    [ "$KEEP_TEXT" = held ] && status_line="$status_line keep=held"
    [ -n "$keep_end_ms" ] && status_line="$status_line kept=$keep_iso"
    [ "$limit_src" = reaper ] && status_line="$status_line limit=reaper"
    ((released)) && status_line="$status_line dry_run=would_$IDLE_ACTION"
    ((save_failures > 0)) && status_line="$status_line save_failures=$save_failures"
    ((destroy_failures > 0)) && status_line="$status_line destroy_failures=$destroy_failures"
    return 0
}

# Takes in the heartbeat's answer (kit_ping_read): a keep set from outside, and the idle
# limit set by `reaper idle`. An answer it cannot read changes nothing (said once per
# reason). Returns 0 when the reading changed what plan decides from.
apply_answer() {
    local changed=1 limit src
    if [ "$KIT_ANSWER" != ok ]; then
        if [ "$KIT_ANSWER_WHY" != "$answer_said" ]; then
            answer_said=$KIT_ANSWER_WHY
            kit_log "cannot read the heartbeat's answer ($KIT_ANSWER_WHY): nothing changes"
        fi
        return 1
    fi
    answer_said="" server_ms=$KIT_SERVER_MS server_clock=$clock_ms
    if [ -n "$KIT_KEEP_MS" ]; then
        [ -n "$keep_end_ms" ] || changed=0
        keep_end_ms=$((clock_ms + KIT_KEEP_MS)) keep_iso=$KIT_KEEP_ISO keep_text=$KIT_KEEP_TEXT
        if [ "$keep_iso" != "$keep_said" ]; then
            keep_said=$keep_iso
            say_kept
        fi
    else
        if [ -n "$keep_end_ms" ]; then
            kit_log "the keep $keep_text has ended (the heartbeat answers no keep)"
            keep_end_ms="" keep_ended=1 changed=0
        fi
        keep_said=""
    fi
    case $KIT_IDLE_AFTER in
    default) limit=$own_limit_ms src=own ;;
    never) limit="" src=reaper ;;
    *) limit=$KIT_IDLE_AFTER src=reaper ;;
    esac
    if [ "$limit" != "$limit_ms" ] || [ "$src" != "$limit_src" ]; then
        limit_ms=$limit limit_src=$src warned=0 released=0 due_ms=0 changed=0
        if [ -z "$limit" ]; then
            kit_log "reaper idle: never $IDLE_ACTION this instance for idleness (until it says otherwise)"
        elif [ "$src" = reaper ]; then
            kit_log "reaper idle: $IDLE_ACTION after $(((limit + 59999) / 60000)) idle min instead of IDLE_LIMIT"
        else
            kit_log "back to IDLE_LIMIT ($IDLE_LIMIT min)"
        fi
    fi
    return "$changed"
}

# A keep seen for the first time: once in the log, once in a notify.
say_kept() {
    local outcome="kept $keep_text, no idle $IDLE_ACTION before then"
    [ "$keep_text" = "with no end set" ] && outcome="kept with no end set, no idle $IDLE_ACTION"
    kit_notify info "$outcome" \
        "idle-watch read a keep set from outside (reaper keep, the status page or the phone); idle $((idle_ms / 60000)) min now. When the keep ends it warns again and waits $WARN_MINUTES min before any idle $IDLE_ACTION"
}

# Now as the heartbeat's clock counts it (the last answer's Date, moved on by the kit's own
# clock), else as this instance's clock does; in milliseconds.
server_now_ms() {
    if [ -n "$server_ms" ]; then
        echo $((server_ms + clock_ms - server_clock))
    else
        kit_now_ms
    fi
}

# Milliseconds since the epoch as $1, a strftime format, in UTC.
utc_text() {
    local TZ=UTC0
    printf "%($1)T\n" $(($2 / 1000))
}

# The warning before an idle destroy: to NOTIFY_URL/<host> as idle_soon, so that a Keep
# pressed on the phone reaches this instance at its next ping.
warn() {
    local left_ms=$((PLAN_DUE - idle_ms)) at when doing=$ACTION_TEXT dry_run="" ended=""
    warned=1 due_ms=$PLAN_DUE
    at=$(($(server_now_ms) + left_ms))
    when="in $(((left_ms + 59999) / 60000)) min"
    ((left_ms > 0)) || when=now
    [ "${DRY_RUN:-0}" = 1 ] && doing="would $IDLE_ACTION" dry_run=" (dry run)"
    ((keep_ended)) && ended="The keep $keep_text has ended. "
    kit_notify warning "idle $((idle_ms / 60000)) min, $doing $when$dry_run" \
        "${ended}idle-watch: $doing this instance at $(utc_text '%Y-%m-%d %H:%M UTC' "$at") unless it is used or kept: press Keep, or touch $KEEP_HINT (holds $KEEP_MINUTES min).$STOP_NOTE" \
        idle_soon "$(utc_text '%Y-%m-%dT%H:%M:%SZ' "$at")"
    keep_ended=0
}

# kit_save_results with a heartbeat every check period meanwhile: a long upload must not
# look like a dead watchdog.
save_with_heartbeat() {
    local pinger rc
    (
        nap=""
        trap '[ -z "$nap" ] || kill "$nap" 2>/dev/null; exit 0' TERM
        while :; do
            sleep "$ping_every" >/dev/null 2>&1 &
            nap=$!
            wait "$nap"
            kit_ping "" "saving results; $status_line"
        done
    ) &
    pinger=$!
    kit_save_results ""
    rc=$?
    kill "$pinger" 2>/dev/null
    wait "$pinger" 2>/dev/null
    return "$rc"
}

# Whether the first failure or every RENOTIFY_EVERY-th: a failure that repeats at every check
# is said again only now and then.
renotify_due() {
    (($1 == 1 || $1 % RENOTIFY_EVERY == 0))
}

# At the limit: the results first, then the destroy (or the stop). A save that outlasted a
# ping period is followed by one more ping that reads the answer: a Keep pressed while the
# results were uploading still spares the instance.
release_now() {
    local idle="idle $((idle_ms / 60000)) min" saved="" started
    if ! kit_release_ready "$IDLE_ACTION"; then
        destroy_failures=$((destroy_failures + 1))
        kit_log "$KIT_DESTROY_MSG (check $destroy_failures)"
        if renotify_due "$destroy_failures"; then
            kit_notify critical "$idle, CANNOT $IDLE_ACTION, still billing" \
                "idle-watch: $KIT_DESTROY_MSG. The heartbeat watch and the reaper take over"
        fi
        return 0
    fi
    started=$(kit_now_ms)
    if ! save_with_heartbeat; then
        save_failures=$((save_failures + 1))
        kit_log "$KIT_SAVE_NOTE (attempt $save_failures; trying again at the next check)"
        if renotify_due "$save_failures"; then
            # The notify is the alert; /fail only when it did not get through.
            kit_notify critical "$idle, results NOT safe, instance KEPT" \
                "idle-watch: $KIT_SAVE_NOTE. The instance keeps billing; the save is tried again at every check (attempt $save_failures)" ||
                kit_ping fail "idle-watch: results not safe, instance kept: $KIT_SAVE_NOTE"
        fi
        return 0
    fi
    if (($(kit_now_ms) - started >= ping_every_ms)); then
        kit_ping_read "saving results; saved, reading the heartbeat's answer; $status_line"
        apply_answer && plan
        if [ "$STATE" != "$ACTION_ING" ]; then
            kit_log "not $ACTION_TEXT after all: $status_line"
            return 0
        fi
    fi
    [ "$KIT_SAVE_STATE" = none ] || saved="results saved, "
    if [ "${DRY_RUN:-0}" = 1 ]; then
        kit_release_self "$IDLE_ACTION"
        kit_notify info "$idle, ${saved}would $IDLE_ACTION (dry run)" \
            "idle-watch: $KIT_SAVE_NOTE; $KIT_DESTROY_MSG. Said once: nothing more until it is used or kept"
        released=1
        return 0
    fi
    if ((destroy_failures == 0)); then
        kit_notify info "$idle, ${saved}$ACTION_TEXT" "idle-watch: $KIT_SAVE_NOTE; $ACTION_TEXT this instance.$STOP_NOTE"
    fi
    kit_ping bye "$status_line"
    if kit_release_self "$IDLE_ACTION"; then
        kit_log "$KIT_DESTROY_MSG"
        exit 0
    fi
    destroy_failures=$((destroy_failures + 1))
    kit_log "$KIT_DESTROY_MSG (attempt $destroy_failures; retrying at the next check)"
    if renotify_due "$destroy_failures"; then
        kit_notify critical "idle $IDLE_ACTION FAILED, still billing" \
            "idle-watch: $KIT_DESTROY_MSG (attempt $destroy_failures). Still running and billing; retrying every check"
    fi
    return 0
}

# Only one watcher per lock file (a template that starts it twice must not double-destroy).
take_lock() {
    command -v flock >/dev/null 2>&1 || return 0
    exec {lock_fd}>>"${IDLE_WATCH_LOCK:-/tmp/idle-watch.lock}" || return 0
    if ! flock -n "$lock_fd"; then
        kit_log "another idle-watch holds ${IDLE_WATCH_LOCK:-/tmp/idle-watch.lock}: leaving the watching to it"
        exit 0
    fi
}

main() {
    IDLE_LIMIT=$(kit_int_setting IDLE_LIMIT 20 1 100000)
    UTIL_THRESHOLD=$(kit_int_setting UTIL_THRESHOLD 5 0 101)
    IDLE_ACTION=${IDLE_ACTION:-destroy}
    case $IDLE_ACTION in
    destroy | stop) ;;
    *)
        kit_log "IDLE_ACTION='${IDLE_ACTION:0:40}' is neither destroy nor stop; using destroy"
        IDLE_ACTION=destroy
        ;;
    esac
    take_lock
    kit_identify
    ACTION_ING=destroying ACTION_TEXT=destroying STOP_NOTE=""
    if [ "$IDLE_ACTION" = stop ]; then
        ACTION_ING=stopping ACTION_TEXT=stopping
    fi
    if [ "$IDLE_ACTION" = stop ] && [ "$KIT_PROVIDER" = digitalocean ]; then
        # Decided: stop does what it says (power off), destroys nothing, and says it saves nothing.
        ACTION_TEXT="powering off"
        STOP_NOTE=" A powered-off DigitalOcean droplet bills its full price: powering off saves nothing until it is destroyed (IDLE_ACTION=destroy destroys it instead)."
        kit_log "IDLE_ACTION=stop on DigitalOcean:$STOP_NOTE"
    fi
    KEEP_HINT=$KEEP_FILE
    [ -d "$(dirname "$KEEP_FILE")" ] || KEEP_HINT=$(kit_keep_fallback)
    step_ms=$(check_every_ms)
    own_limit_ms=$((IDLE_LIMIT * 60000))
    sleep_for=${IDLE_WATCH_SLEEP:-${CHECK_EVERY:-60}}
    [[ $sleep_for =~ ^[0-9]{1,6}(\.[0-9]{1,3})?$ ]] || sleep_for=$((step_ms / 1000))
    # while a save runs, the heartbeat still gets a ping per check period (at least 1 s)
    ping_every=$sleep_for sleeps=1
    [[ $sleep_for =~ ^0*(\.0*)?$ ]] && ping_every=1 sleeps=0
    ping_every_ms=$(CHECK_EVERY=$ping_every kit_ms_setting CHECK_EVERY 1 1)
    max_loops=${IDLE_WATCH_MAX_LOOPS:-0}
    [[ $max_loops =~ ^[0-9]{1,9}$ ]] || max_loops=0

    sleep_pid=""
    trap '' HUP
    trap '[ -z "$sleep_pid" ] || kill "$sleep_pid" 2>/dev/null' EXIT
    trap 'kit_log "stopped by SIGTERM"; exit 143' TERM
    trap 'kit_log "stopped by SIGINT"; exit 130' INT
    kit_log "watching $KIT_HOST: $IDLE_ACTION after $IDLE_LIMIT idle min (GPU under $UTIL_THRESHOLD%, no python, no SSH input for $SSH_ACTIVE_MINUTES min, no busy Jupyter kernel${RESULTS_DIR:+, nothing written in $RESULTS_DIR}); a check every $((step_ms / 1000)).$(printf '%03d' $((step_ms % 1000)))s; $KEEP_HINT holds $KEEP_MINUTES min; a keep or an idle limit set from outside comes with the heartbeat's answer${DRY_RUN:+; DRY_RUN=$DRY_RUN}"

    # The state between checks (see check_once, tick, plan, apply_answer and warn).
    idle_ms=0 warned=0 due_ms=0 released=0 destroy_failures=0 save_failures=0
    keep_expired_said=0 loop=0 STATE="" status_line=""
    clock_ms=0 wall_ms=$(kit_now_ms) server_ms="" server_clock=0 answer_said=""
    limit_ms=$own_limit_ms limit_src=own
    keep_end_ms="" keep_iso="" keep_text="" keep_said="" keep_ended=0
    while :; do
        loop=$((loop + 1))
        export IDLE_WATCH_LOOP=$loop
        tick
        check_once
        plan
        kit_log "$status_line"
        kit_ping_read "$status_line"
        if apply_answer; then
            plan
            kit_log "$status_line (after the heartbeat's answer)"
        fi
        if [ "$STATE" = kept ] || [ -z "$limit_ms" ]; then
            warned=0 released=0
        fi
        ((WARN_NOW)) && warn
        [ "$STATE" = "$ACTION_ING" ] && release_now
        if ((max_loops > 0 && loop >= max_loops)); then
            kit_log "stopping after $loop checks (IDLE_WATCH_MAX_LOOPS)"
            exit 0
        fi
        ((sleeps)) || continue # IDLE_WATCH_SLEEP=0: no sleep to start
        # In the background, so that SIGTERM is handled at once rather than after the sleep.
        sleep "$sleep_for" &
        sleep_pid=$!
        wait "$sleep_pid"
        sleep_pid=""
    done
}

main "$@"
