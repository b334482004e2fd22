# shellcheck shell=bash
# common.sh — shared by run.sh and idle-watch.sh; sourced, never run.
#
# Who this instance is, how to tell a human (notify), how to tell the heartbeat (ping), how
# to make the results safe before the instance goes (kit_save_results: one code path for
# run.sh and idle-watch), and how to destroy or stop this instance with the instance's own
# key. Every function returns non-zero on failure and never exits: the callers decide, and
# the watchdog must never die of an error. No function prints a key or a URL that holds one
# (HEARTBEAT_URL and NOTIFY_URL carry the ping key in their path; the store's keys stay in
# the environment, never on a command line).

RUNPOD_API_URL=${RUNPOD_API_URL:-https://api.runpod.io/v2}
VAST_API_URL=${VAST_API_URL:-https://console.vast.ai}
# notify and ping never hold the caller up for longer than this (seconds, curl --max-time).
KIT_HTTP_TIMEOUT=${KIT_HTTP_TIMEOUT:-5}
# one DELETE to the provider (seconds).
KIT_DESTROY_TIMEOUT=${KIT_DESTROY_TIMEOUT:-15}
KIT_NAME=${KIT_NAME:-kit}
KIT_HOST=""
# Filled by kit_destroy_self / kit_release_self: one line saying what happened (never a key).
KIT_DESTROY_MSG=""
# Filled by kit_save_results: KIT_SAVE_STATE is safe, unsafe or none (nothing to save), and
# KIT_SAVE_NOTE one line saying what was saved where, or why the results are not safe.
KIT_SAVE_STATE=""
KIT_SAVE_NOTE=""
# The UTC time of this process's first save: with the host, the run's prefix in the store.
KIT_RUN_TIME=""
KIT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" 2>/dev/null && pwd) || KIT_LIB_DIR=.

kit_log() {
    local TZ=UTC0
    printf '%(%Y-%m-%dT%H:%M:%SZ)T [%s] %s\n' -1 "$KIT_NAME" "$*" >&2
}

# Run a command with a time limit when coreutils' timeout exists: a hung nvidia-smi (a GPU
# fallen off the bus) or a hung push must not stall the caller forever.
kit_timeout() {
    local seconds=$1
    shift
    if command -v timeout >/dev/null 2>&1; then
        timeout --kill-after=5 "$seconds" "$@"
    else
        "$@"
    fi
}

# The monitor name on the heartbeat: one HEARTBEAT_URL serves every instance of a template.
kit_host() {
    if [ -n "$KIT_HOST" ]; then
        printf '%s\n' "$KIT_HOST"
        return 0
    fi
    local h="" LC_ALL=C
    if [ -n "${HEARTBEAT_HOST:-}" ]; then
        h=$HEARTBEAT_HOST
    elif [ -n "${RUNPOD_POD_ID:-}" ]; then
        h="runpod-$RUNPOD_POD_ID"
    elif [ -n "${CONTAINER_ID:-}" ]; then
        h="vast-$CONTAINER_ID"
    else
        h=$(hostname 2>/dev/null) || h=""
    fi
    h=${h//[^A-Za-z0-9._-]/-}
    h=${h:0:100}
    case $h in
    '' | . | ..) h=unknown-host ;;
    esac
    KIT_HOST=$h
    printf '%s\n' "$h"
}

# A JSON string literal for $1: backslash, quote and every control character escaped.
kit_json_quote() {
    local s=$1 code ch esc
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\r'/\\r}
    s=${s//$'\t'/\\t}
    if [[ $s == *[$'\001'-$'\037']* ]]; then
        for code in {1..31}; do
            printf -v ch '%b' "\\0$(printf '%03o' "$code")"
            printf -v esc '\\u%04x' "$code"
            s=${s//"$ch"/$esc}
        done
    fi
    printf '"%s"' "$s"
}

# POST stdin to $1; prints the HTTP status (000 when nothing answered).
kit_post() {
    local url=$1 content_type=$2 code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$KIT_HTTP_TIMEOUT" \
        -X POST -H "Content-Type: $content_type" --data-binary @- "$url" 2>/dev/null) || true
    printf '%s\n' "${code:-000}"
}

# Tell the human: POST {"text": "<host>: $1"} to NOTIFY_URL. Without NOTIFY_URL it only logs.
kit_notify() {
    local text code
    text="$(kit_host): $1"
    kit_log "notify: $1"
    [ -n "${NOTIFY_URL:-}" ] || return 0
    code=$(printf '{"text": %s}' "$(kit_json_quote "$text")" | kit_post "$NOTIFY_URL" application/json)
    case $code in
    2??) return 0 ;;
    esac
    kit_log "notify failed (HTTP $code)"
    return 1
}

# Tell the heartbeat: POST $2 (the status line, may be empty) to HEARTBEAT_URL/<host>[/$1],
# where $1 is start, fail, bye or an exit status 0-255. Without HEARTBEAT_URL it does nothing.
kit_ping() {
    local suffix=${1:-} body=${2:-} url code
    [ -n "${HEARTBEAT_URL:-}" ] || return 0
    url="${HEARTBEAT_URL%/}/$(kit_host)${suffix:+/$suffix}"
    code=$(printf '%s' "$body" | kit_post "$url" 'text/plain; charset=utf-8')
    case $code in
    2??) return 0 ;;
    esac
    kit_log "heartbeat ping ${suffix:-(plain)} failed (HTTP $code)"
    return 1
}

# $1 (DELETE, POST or PUT) to $2 with the key $3 in an Authorization header read from stdin,
# so the key never appears in a process listing; $4, when given, is a JSON body. Sets
# KIT_HTTP_CODE and KIT_HTTP_BODY (first 2 KB).
kit_http_send() {
    local method=$1 url=$2 key=$3 body=${4:-} tmp
    local -a data=()
    KIT_HTTP_CODE=000
    KIT_HTTP_BODY=""
    tmp=$(mktemp 2>/dev/null) || tmp=""
    if [ -z "$tmp" ]; then
        kit_log "mktemp failed: cannot read the provider's answer"
        return 1
    fi
    [ -z "$body" ] || data=(-H 'Content-Type: application/json' --data-binary "$body")
    KIT_HTTP_CODE=$(printf 'Authorization: Bearer %s\n' "$key" |
        curl -s -o "$tmp" -w '%{http_code}' --max-time "$KIT_DESTROY_TIMEOUT" \
            -X "$method" -H @- "${data[@]}" "$url" 2>/dev/null) || true
    KIT_HTTP_CODE=${KIT_HTTP_CODE:-000}
    KIT_HTTP_BODY=$(head -c 2000 "$tmp" 2>/dev/null) || KIT_HTTP_BODY=""
    rm -f "$tmp"
    return 0
}

# The provider's one-line reason from an error body (RunPod RFC 9457 detail/title, Vast
# msg/error), at most 200 characters; empty when there is none.
kit_error_detail() {
    local body=$1 field value
    for field in detail msg title error; do
        if [[ $body =~ \"$field\"[[:space:]]*:[[:space:]]*\"([^\"]*)\" ]]; then
            value=${BASH_REMATCH[1]}
            printf '%s\n' "${value:0:200}"
            return 0
        fi
    done
    return 0
}

# What one answer to a destroy or stop means: ok, gone, refused (try the next key) or
# failed. RunPod answers 404 for "not found or not visible to this key": while another key
# is left it counts as refused; with the last key it counts as gone. Vast answers 404 for a
# bad key too: only error "not_found" is gone. A RunPod destroy answers 204 (200 tolerated),
# a stop 200 with the pod; Vast answers {"success": true} to both.
kit_release_outcome() {
    local action=$1 provider=$2 code=$3 body=$4 more_keys=$5
    case $action:$provider:$code in
    destroy:runpod:200 | destroy:runpod:204 | stop:runpod:200) echo ok ;;
    *:runpod:401 | *:runpod:403) echo refused ;;
    *:runpod:404) if [ "$more_keys" = 1 ]; then echo refused; else echo gone; fi ;;
    *:vast:2??)
        if [[ $body =~ \"success\"[[:space:]]*:[[:space:]]*true ]]; then echo ok; else echo failed; fi
        ;;
    *:vast:401 | *:vast:403) echo refused ;;
    *:vast:404)
        if [[ $body =~ \"error\"[[:space:]]*:[[:space:]]*\"not_found\" ]]; then echo gone; else echo refused; fi
        ;;
    *) echo failed ;;
    esac
}

# Destroy ($1 = destroy, the default) or stop ($1 = stop) this instance.
#   RunPod: destroy = DELETE $RUNPOD_API_URL/pods/$RUNPOD_POD_ID, stop = POST .../action
#   {"action": "stop"}, with the pod-scoped RUNPOD_API_KEY;
#   Vast: destroy = DELETE $VAST_API_URL/api/v0/instances/$CONTAINER_ID/, stop = PUT there
#   {"state": "stopped"}, with CONTAINER_API_KEY;
# either falls back to REAPER_SELF_KEY when refused. Confirmed by the answer itself (see
# kit_release_outcome; a 404 "not found" = already gone). DRY_RUN=1 only says what it would
# do. Returns 0 when done or gone; KIT_DESTROY_MSG says what happened and with which key (the
# variable's name, never its value).
# shellcheck disable=SC2034  # KIT_DESTROY_MSG is read by the scripts that source this file
kit_release_self() {
    local action=${1:-destroy} provider id url what var key outcome detail refusals="" tried=0
    local more i method body="" past verb how
    local -a keyvars
    case $action in
    stop) past=stopped verb=stopping ;;
    *) action=destroy past=destroyed verb=destroying ;;
    esac
    if [ -n "${RUNPOD_POD_ID:-}" ]; then
        provider=runpod id=$RUNPOD_POD_ID what="RunPod pod $RUNPOD_POD_ID"
        url="${RUNPOD_API_URL%/}/pods/$id"
        keyvars=(RUNPOD_API_KEY REAPER_SELF_KEY)
    elif [ -n "${CONTAINER_ID:-}" ]; then
        provider=vast id=$CONTAINER_ID what="Vast instance $CONTAINER_ID"
        url="${VAST_API_URL%/}/api/v0/instances/$id/"
        keyvars=(CONTAINER_API_KEY REAPER_SELF_KEY)
    else
        KIT_DESTROY_MSG="cannot tell which instance this is (neither RUNPOD_POD_ID nor CONTAINER_ID is set): not ${verb}"
        return 1
    fi
    if [[ ! $id =~ ^[A-Za-z0-9_-]{1,64}$ ]]; then
        KIT_DESTROY_MSG="the instance id '${id:0:64}' is not an id (letters, digits, - and _): not ${verb}"
        return 1
    fi
    method=DELETE how=DELETE
    if [ "$action" = stop ] && [ "$provider" = runpod ]; then
        method=POST url="$url/action" body='{"action": "stop"}' how='POST .../action stop'
    elif [ "$action" = stop ]; then
        method=PUT body='{"state": "stopped"}' how='PUT state stopped'
    fi
    for ((i = 0; i < ${#keyvars[@]}; i++)); do
        var=${keyvars[i]}
        key=${!var:-}
        [ -n "$key" ] || continue
        if [ "${DRY_RUN:-0}" = 1 ]; then
            KIT_DESTROY_MSG="dry run: would $action $what ($how with $var)"
            return 0
        fi
        more=0
        if [ "$i" -lt $((${#keyvars[@]} - 1)) ] && [ -n "${!keyvars[i + 1]:-}" ]; then
            more=1
        fi
        tried=1
        kit_http_send "$method" "$url" "$key" "$body"
        outcome=$(kit_release_outcome "$action" "$provider" "$KIT_HTTP_CODE" "$KIT_HTTP_BODY" "$more")
        detail=$(kit_error_detail "$KIT_HTTP_BODY")
        case $outcome in
        ok)
            KIT_DESTROY_MSG="$past $what (HTTP $KIT_HTTP_CODE, with $var)"
            return 0
            ;;
        gone)
            KIT_DESTROY_MSG="$what is already gone (HTTP $KIT_HTTP_CODE${detail:+: $detail}, with $var)"
            return 0
            ;;
        refused)
            refusals="$refusals${refusals:+; }$var refused (HTTP $KIT_HTTP_CODE${detail:+: $detail})"
            kit_log "$var refused (HTTP $KIT_HTTP_CODE)"
            ;;
        *)
            KIT_DESTROY_MSG="$verb $what failed (HTTP $KIT_HTTP_CODE${detail:+: $detail}, with $var)"
            return 1
            ;;
        esac
    done
    if [ "$tried" = 0 ]; then
        KIT_DESTROY_MSG="no key to $action $what: set ${keyvars[0]} or REAPER_SELF_KEY"
    else
        KIT_DESTROY_MSG="$verb $what failed: $refusals"
    fi
    return 1
}

kit_destroy_self() {
    kit_release_self destroy
}

# Whole minutes or percent from the environment: a malformed value falls back to the
# default and says so — the watchdog must start even with a typo in its template.
kit_int_setting() {
    local name=$1 default=$2 min=$3 max=$4 value
    value=${!name:-$default}
    if [[ $value =~ ^[0-9]{1,6}$ ]] && ((10#$value >= min && 10#$value <= max)); then
        printf '%s\n' "$((10#$value))"
        return 0
    fi
    kit_log "$name='${value:0:40}' is not a whole number from $min to $max; using $default"
    printf '%s\n' "$default"
    return 1
}

# Seconds (up to 3 decimals, so that tests can use 0.1) from the environment, printed in
# milliseconds; at least $3 ms. A malformed value falls back to the default and says so.
kit_ms_setting() {
    local name=$1 default=$2 min=${3:-1} value ms frac
    value=${!name:-$default}
    if [[ $value =~ ^([0-9]{1,6})(\.([0-9]{1,3}))?$ ]]; then
        frac=${BASH_REMATCH[3]}000
        ms=$((10#${BASH_REMATCH[1]} * 1000 + 10#${frac:0:3}))
        if ((ms >= min)); then
            printf '%s\n' "$ms"
            return 0
        fi
    fi
    kit_log "$name='${value:0:40}' is not a number of seconds$( ((min > 0)) && echo ' above 0'); using $default"
    printf '%s\n' "$((default * 1000))"
    return 1
}

# Milliseconds as the seconds that sleep takes ("1.500").
kit_ms_seconds() {
    printf '%d.%03d\n' "$(($1 / 1000))" "$(($1 % 1000))"
}

# Now, in milliseconds since the epoch.
kit_now_ms() {
    local t=${EPOCHREALTIME:-}
    [ -n "$t" ] || t=$(date +%s.%N)
    kit_epoch_ms "$t"
}

# "1701416400.123456789" (or "1701416400") as milliseconds.
kit_epoch_ms() {
    local t=${1/,/.} int frac
    int=${t%%.*}
    frac=000
    [[ $t == *.* ]] && frac=${t#*.}000
    [[ $int =~ ^[0-9]+$ ]] || int=0
    frac=${frac:0:3}
    [[ $frac =~ ^[0-9]{3}$ ]] || frac=000
    printf '%s\n' "$((10#$int * 1000 + 10#$frac))"
}

# Whether a file under RESULTS_DIR was written within STABLE_FOR (a checkpoint being saved
# is work): prints writing, still, none (no such directory) or ? (unreadable = writing).
# .git directories and the kit's own manifest do not count. Symbolic links are followed, as
# results.py follows them when it saves: RESULTS_DIR itself may be a link (outputs ->
# /workspace/ckpt), and so may a directory under it. A link loop is skipped, as results.py
# lists each directory once; any other error of find is unreadable.
kit_results_activity() {
    local dir=${RESULTS_DIR:-} stable_ms cutoff report rc line found=0 problem=0
    [ -n "$dir" ] || return 0
    if [ ! -d "$dir" ]; then
        echo none
        return 0
    fi
    stable_ms=$(kit_ms_setting STABLE_FOR 60 0 2>/dev/null)
    cutoff=$(kit_ms_seconds $(($(kit_now_ms) - stable_ms)))
    # find's own messages in English, to tell a loop from an unreadable directory.
    report=$(LC_ALL=C find -L "$dir" -name .git -prune -o -type f ! -name MANIFEST.json \
        ! -name .MANIFEST.json.partial -newermt "@$cutoff" -print -quit 2>&1)
    rc=$?
    while IFS= read -r line; do
        case $line in
        '') ;;
        "find: "*"File system loop detected"*) ;;
        "find: "*) problem=1 ;;
        *) found=1 ;;
        esac
    done <<<"$report"
    if ((found)); then
        echo writing
    elif ((problem)) || { [ "$rc" != 0 ] && [ -z "$report" ]; }; then
        echo '?'
    else
        echo still
    fi
    return 0
}

# Make the results safe before this instance goes, for run.sh's exit path and idle-watch's
# destroy alike: first PUSH_CMD when set (a command line run with bash -c; RUN_STATUS = $1,
# the job's exit status, empty for idle-watch), then RESULTS_DIR to RESULTS_URL (s3://... or
# git) through results.py: manifest, upload, and a verified read-back. Each step is cut off
# after PUSH_TIMEOUT seconds. DRY_RUN=1 only says what it would do. Sets KIT_SAVE_STATE
# (safe, unsafe, none) and KIT_SAVE_NOTE; returns 0 unless the results are not safe.
# shellcheck disable=SC2034  # KIT_SAVE_NOTE is read by the scripts that source this file
kit_save_results() {
    local status=${1:-} timeout_s rc notes="" line py dry=()
    KIT_SAVE_STATE=none
    KIT_SAVE_NOTE=""
    timeout_s=$(kit_int_setting PUSH_TIMEOUT 1800 1 86400)
    [ "${DRY_RUN:-0}" = 1 ] && dry=(--dry-run)
    if [ -n "${PUSH_CMD:-}" ]; then
        KIT_SAVE_STATE=safe
        if [ "${DRY_RUN:-0}" = 1 ]; then
            kit_log "dry run: would run PUSH_CMD (at most ${timeout_s}s)"
            notes="dry run: would run PUSH_CMD"
        else
            kit_log "pushing results (PUSH_CMD, at most ${timeout_s}s)"
            RUN_STATUS=$status kit_timeout "$timeout_s" bash -c "$PUSH_CMD" </dev/null >&2
            rc=$?
            if [ "$rc" != 0 ]; then
                KIT_SAVE_STATE=unsafe
                if [ "$rc" = 124 ]; then
                    KIT_SAVE_NOTE="push FAILED (timed out after ${timeout_s}s)"
                else
                    KIT_SAVE_NOTE="push FAILED (PUSH_CMD exited $rc)"
                fi
                return 1
            fi
            notes="results pushed"
        fi
    fi
    if [ -z "${RESULTS_URL:-}" ] && [ -z "${RESULTS_DIR:-}" ]; then
        KIT_SAVE_NOTE=${notes:-nothing to save (RESULTS_URL and PUSH_CMD unset)}
        return 0
    fi
    KIT_SAVE_STATE=unsafe
    if [ -z "${RESULTS_URL:-}" ] || [ -z "${RESULTS_DIR:-}" ]; then
        KIT_SAVE_NOTE="results NOT safe: RESULTS_DIR and RESULTS_URL go together (one of them is unset)"
        return 1
    fi
    if ! py=$(command -v python3 2>/dev/null); then
        KIT_SAVE_NOTE="results NOT safe: python3 is not on this instance (results.py needs it)"
        return 1
    fi
    if [ -z "$KIT_RUN_TIME" ]; then
        KIT_RUN_TIME=$(TZ=UTC0 printf '%(%Y%m%dT%H%M%SZ)T' -1)
    fi
    line=$(kit_timeout "$timeout_s" "$py" "$KIT_LIB_DIR/results.py" save "$RESULTS_DIR" \
        "$RESULTS_URL" "$(kit_host)/$KIT_RUN_TIME" "${dry[@]}" </dev/null)
    rc=$?
    line=${line##*$'\n'}
    if [ "$rc" = 0 ]; then
        KIT_SAVE_STATE=safe
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        line="results NOT safe: the save was cut off after ${timeout_s}s (PUSH_TIMEOUT)"
    elif [[ $line != "results NOT safe"* ]]; then
        line="results NOT safe: results.py failed (exit $rc)"
    fi
    KIT_SAVE_NOTE="${notes:+$notes; }$line"
    [ "$KIT_SAVE_STATE" = safe ]
}
