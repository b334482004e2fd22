# shellcheck shell=bash
# common.sh — shared by run.sh and idle-watch.sh; sourced, never run.
#
# Who this instance is, how to tell a human (notify), how to tell the heartbeat (ping), and how
# to destroy this instance with the instance's own key. Every function returns non-zero on
# failure and never exits: the callers decide, and the watchdog must never die of an error.
# No function prints a key or a URL that holds one (HEARTBEAT_URL and NOTIFY_URL carry the
# ping key in their path).

RUNPOD_API_URL=${RUNPOD_API_URL:-https://api.runpod.io/v2}
VAST_API_URL=${VAST_API_URL:-https://console.vast.ai}
# notify and ping never hold the caller up for longer than this (seconds, curl --max-time).
KIT_HTTP_TIMEOUT=${KIT_HTTP_TIMEOUT:-5}
# one DELETE to the provider (seconds).
KIT_DESTROY_TIMEOUT=${KIT_DESTROY_TIMEOUT:-15}
KIT_NAME=${KIT_NAME:-kit}
KIT_HOST=""
# Filled by kit_destroy_self: one line saying what happened (never a key).
KIT_DESTROY_MSG=""

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

# DELETE $1 with the key $2 in an Authorization header read from stdin, so the key never
# appears in a process listing. Sets KIT_HTTP_CODE and KIT_HTTP_BODY (first 2 KB).
kit_http_delete() {
    local url=$1 key=$2 tmp
    KIT_HTTP_CODE=000
    KIT_HTTP_BODY=""
    tmp=$(mktemp 2>/dev/null) || tmp=""
    if [ -z "$tmp" ]; then
        kit_log "mktemp failed: cannot read the provider's answer"
        return 1
    fi
    KIT_HTTP_CODE=$(printf 'Authorization: Bearer %s\n' "$key" |
        curl -s -o "$tmp" -w '%{http_code}' --max-time "$KIT_DESTROY_TIMEOUT" \
            -X DELETE -H @- "$url" 2>/dev/null) || true
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

# What one DELETE answer means: destroyed, gone, refused (try the next key) or failed.
# RunPod answers 404 for "not found or not visible to this key": while another key is left
# it counts as refused; with the last key it counts as gone. Vast answers 404 for a bad key
# too: only error "not_found" is gone.
kit_delete_outcome() {
    local provider=$1 code=$2 body=$3 more_keys=$4
    case $provider:$code in
    runpod:200 | runpod:204) echo destroyed ;;
    runpod:401 | runpod:403) echo refused ;;
    runpod:404) if [ "$more_keys" = 1 ]; then echo refused; else echo gone; fi ;;
    vast:2??)
        if [[ $body =~ \"success\"[[:space:]]*:[[:space:]]*true ]]; then echo destroyed; else echo failed; fi
        ;;
    vast:401 | vast:403) echo refused ;;
    vast:404)
        if [[ $body =~ \"error\"[[:space:]]*:[[:space:]]*\"not_found\" ]]; then echo gone; else echo refused; fi
        ;;
    *) echo failed ;;
    esac
}

# Destroy this instance: RunPod DELETE $RUNPOD_API_URL/pods/$RUNPOD_POD_ID with the pod-scoped
# RUNPOD_API_KEY, Vast DELETE $VAST_API_URL/api/v0/instances/$CONTAINER_ID/ with
# CONTAINER_API_KEY; either falls back to REAPER_SELF_KEY when refused. Confirmed by the
# answer itself (RunPod 204, Vast success true, a 404 "not found" = already gone).
# DRY_RUN=1 only says what it would do. Returns 0 when destroyed or gone; KIT_DESTROY_MSG
# says what happened and with which key (the variable's name, never its value).
# shellcheck disable=SC2034  # KIT_DESTROY_MSG is read by the scripts that source this file
kit_destroy_self() {
    local provider id url what var key outcome detail refusals="" tried=0 more i
    local -a keyvars
    if [ -n "${RUNPOD_POD_ID:-}" ]; then
        provider=runpod id=$RUNPOD_POD_ID what="RunPod pod $RUNPOD_POD_ID"
        url="${RUNPOD_API_URL%/}/pods/$id"
        keyvars=(RUNPOD_API_KEY REAPER_SELF_KEY)
    elif [ -n "${CONTAINER_ID:-}" ]; then
        provider=vast id=$CONTAINER_ID what="Vast instance $CONTAINER_ID"
        url="${VAST_API_URL%/}/api/v0/instances/$id/"
        keyvars=(CONTAINER_API_KEY REAPER_SELF_KEY)
    else
        KIT_DESTROY_MSG="cannot tell which instance this is (neither RUNPOD_POD_ID nor CONTAINER_ID is set): not destroying"
        return 1
    fi
    if [[ ! $id =~ ^[A-Za-z0-9_-]{1,64}$ ]]; then
        KIT_DESTROY_MSG="the instance id '${id:0:64}' is not an id (letters, digits, - and _): not destroying"
        return 1
    fi
    for ((i = 0; i < ${#keyvars[@]}; i++)); do
        var=${keyvars[i]}
        key=${!var:-}
        [ -n "$key" ] || continue
        if [ "${DRY_RUN:-0}" = 1 ]; then
            KIT_DESTROY_MSG="dry run: would destroy $what (DELETE with $var)"
            return 0
        fi
        more=0
        if [ "$i" -lt $((${#keyvars[@]} - 1)) ] && [ -n "${!keyvars[i + 1]:-}" ]; then
            more=1
        fi
        tried=1
        kit_http_delete "$url" "$key"
        outcome=$(kit_delete_outcome "$provider" "$KIT_HTTP_CODE" "$KIT_HTTP_BODY" "$more")
        detail=$(kit_error_detail "$KIT_HTTP_BODY")
        case $outcome in
        destroyed)
            KIT_DESTROY_MSG="destroyed $what (HTTP $KIT_HTTP_CODE, with $var)"
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
            KIT_DESTROY_MSG="destroying $what failed (HTTP $KIT_HTTP_CODE${detail:+: $detail}, with $var)"
            return 1
            ;;
        esac
    done
    if [ "$tried" = 0 ]; then
        KIT_DESTROY_MSG="no key to destroy $what: set ${keyvars[0]} or REAPER_SELF_KEY"
    else
        KIT_DESTROY_MSG="destroying $what failed: $refusals"
    fi
    return 1
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
