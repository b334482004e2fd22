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
DIGITALOCEAN_API_URL=${DIGITALOCEAN_API_URL:-https://api.digitalocean.com/v2}
# DigitalOcean's metadata service; the address also serves other clouds' metadata.
DIGITALOCEAN_METADATA_URL=${DIGITALOCEAN_METADATA_URL:-http://169.254.169.254/metadata/v1}
# notify and ping never hold the caller up for longer than this (seconds, curl --max-time).
KIT_HTTP_TIMEOUT=${KIT_HTTP_TIMEOUT:-5}
# one DELETE to the provider (seconds).
KIT_DESTROY_TIMEOUT=${KIT_DESTROY_TIMEOUT:-15}
# one request to the metadata service: off DigitalOcean nothing may answer at all (seconds).
KIT_METADATA_TIMEOUT=${KIT_METADATA_TIMEOUT:-2}
KIT_NAME=${KIT_NAME:-kit}
# touched to hold idle-watch off for an hour (by you, or by run.sh when the results are not safe)
KEEP_FILE=${KEEP_FILE:-/workspace/.keep}
# Filled once by kit_identify: the monitor host, and the instance it destroys (the provider
# and its id; both empty when the kit cannot tell).
KIT_HOST=""
KIT_PROVIDER=""
KIT_ID=""
KIT_IDENTIFIED=0
# Filled by kit_destroy_self / kit_release_self / kit_release_ready: one line saying what
# happened (never a key).
KIT_DESTROY_MSG=""
# Filled by kit_save_results: KIT_SAVE_STATE is safe, unsafe or none (nothing to save), and
# KIT_SAVE_NOTE one line saying what was saved where, or why the results are not safe.
KIT_SAVE_STATE=""
KIT_SAVE_NOTE=""
# The UTC time of this process's first save: with the host, the run's prefix in the store.
KIT_RUN_TIME=""
# Filled by kit_ping_read: what the heartbeat answered (see kit_read_answer).
KIT_ANSWER="" KIT_ANSWER_WHY="" KIT_KEEP_MS="" KIT_KEEP_ISO="" KIT_KEEP_TEXT=""
KIT_IDLE_AFTER="" KIT_SERVER_MS=""
# The URL variables whose 404 was said (" HEARTBEAT_URL NOTIFY_URL "): see kit_http_failed.
KIT_SAID_404=" "
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

# The body of a 200 answer from the metadata service at $1 (64 KB at most). Never through a
# proxy: the address is link-local, and a proxy would answer for another machine.
kit_metadata_get() {
    local out code
    out=$(curl -s --noproxy '*' --connect-timeout "$KIT_METADATA_TIMEOUT" \
        --max-time "$KIT_METADATA_TIMEOUT" -w '\n%{http_code}' "$1" 2>/dev/null | head -c 65600)
    code=${out##*$'\n'}
    [ "$code" = 200 ] || return 1
    printf '%s\n' "${out%$'\n'*}"
}

# This droplet's id from DigitalOcean's metadata service, printed; fails off DigitalOcean.
# Only an answer that is DigitalOcean's counts: /metadata/v1.json must name a droplet_id
# (the same address serves other clouds' metadata, which has none), and /metadata/v1/id must
# say the same id. Nothing is ever guessed.
kit_droplet_id() {
    local base=${DIGITALOCEAN_METADATA_URL%/} json listed id
    json=$(kit_metadata_get "$base.json") || return 1
    [[ $json =~ \"droplet_id\"[[:space:]]*:[[:space:]]*([0-9]{1,20})[[:space:]]*[,}] ]] || return 1
    listed=${BASH_REMATCH[1]}
    id=$(kit_metadata_get "$base/id") || return 1
    id=${id//[[:space:]]/}
    if [ "$id" != "$listed" ]; then
        kit_log "DigitalOcean metadata: /id says '${id:0:24}', v1.json says $listed: not using either"
        return 1
    fi
    printf '%s\n' "$id"
}

# Who this instance is, once per process (call it in the script itself, not in a $(...)):
# the provider and id it destroys (RunPod RUNPOD_POD_ID, Vast CONTAINER_ID, else a
# DigitalOcean droplet found by its metadata) and the monitor host on the heartbeat:
# HEARTBEAT_HOST if set, else runpod-<id>, vast-<id>, do-<id>, else the hostname. One
# HEARTBEAT_URL serves every instance of a template.
kit_identify() {
    local h LC_ALL=C
    [ "$KIT_IDENTIFIED" = 1 ] && return 0
    KIT_IDENTIFIED=1
    KIT_PROVIDER="" KIT_ID=""
    if [ -n "${RUNPOD_POD_ID:-}" ]; then
        KIT_PROVIDER=runpod KIT_ID=$RUNPOD_POD_ID
    elif [ -n "${CONTAINER_ID:-}" ]; then
        KIT_PROVIDER=vast KIT_ID=$CONTAINER_ID
    elif KIT_ID=$(kit_droplet_id); then
        KIT_PROVIDER=digitalocean
    else
        KIT_ID=""
    fi
    if [ -n "${HEARTBEAT_HOST:-}" ]; then
        h=$HEARTBEAT_HOST
    else
        case $KIT_PROVIDER in
        runpod) h="runpod-$KIT_ID" ;;
        vast) h="vast-$KIT_ID" ;;
        digitalocean) h="do-$KIT_ID" ;;
        *) h=$(hostname 2>/dev/null) || h="" ;;
        esac
    fi
    h=${h//[^A-Za-z0-9._-]/-}
    h=${h:0:100}
    case $h in
    '' | . | ..) h=unknown-host ;;
    esac
    KIT_HOST=$h
}

# The monitor name on the heartbeat (see kit_identify).
kit_host() {
    kit_identify
    printf '%s\n' "$KIT_HOST"
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

# A request to the URL in the variable $1 (HEARTBEAT_URL, NOTIFY_URL) got the status $2; $3
# says what it was. A 2xx ends an episode of 404s. Any other failure is one line each time. A
# 404 is a wrong ping key or path — reaper answers 404 to everything under a wrong key, so it
# would be the same line every minute for ever: it is said once per episode, naming the
# variable and what to check, never the URL (it holds the key). Nothing stops for it.
kit_http_outcome() {
    local var=$1 code=$2 what=$3 hint
    case $code in
    2??)
        KIT_SAID_404=${KIT_SAID_404/ $var / }
        return 0
        ;;
    404) ;;
    *)
        kit_log "$what failed (HTTP $code)"
        return 1
        ;;
    esac
    [[ $KIT_SAID_404 == *" $var "* ]] && return 1
    KIT_SAID_404="$KIT_SAID_404$var "
    case $var in
    HEARTBEAT_URL) hint="…/ping/<key>; with HEARTBEAT_AUTO_CREATE=false the monitor $KIT_HOST must exist" ;;
    *) hint="…/alert/<key>" ;;
    esac
    hint="check its ping key (the reaper's REAPER_PING_KEY) and its path ($hint)"
    kit_log "$var answered 404: $hint (said once until it answers; the kit goes on)"
    return 1
}

# POST stdin to $1; prints the HTTP status (000 when nothing answered).
kit_post() {
    local url=$1 content_type=$2 code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$KIT_HTTP_TIMEOUT" \
        -X POST -H "Content-Type: $content_type" --data-binary @- "$url" 2>/dev/null) || true
    printf '%s\n' "${code:-000}"
}

# Tell the human, at NOTIFY_URL/<host>: $1 the level (info, warning, critical), $2 the
# outcome (the title is "<host>: $2": a person triages from it alone), $3 the details.
# With $4 = idle_soon and $5 = the ISO time of the destroy it announces, the body is the
# warning that carries Keep buttons: {"kind": "idle_soon", "text": "<title>\n<details>",
# "destroy_at": ...}. A reaper older than /alert/<key>/<host> answers 404 there: the same
# body then goes to NOTIFY_URL itself. Without NOTIFY_URL it only logs. Returns 1 when the
# notify did not get through.
kit_notify() {
    local level=$1 outcome=$2 details=${3:-} kind=${4:-} destroy_at=${5:-} title json code
    kit_identify
    title="$KIT_HOST: $outcome"
    kit_log "notify ($level): $outcome${details:+ — $details}"
    [ -n "${NOTIFY_URL:-}" ] || return 0
    if [ -n "$kind" ]; then
        json=$(printf '{"kind": %s, "text": %s, "destroy_at": %s}' "$(kit_json_quote "$kind")" \
            "$(kit_json_quote "$title${details:+$'\n'$details}")" "$(kit_json_quote "$destroy_at")")
    else
        json=$(printf '{"title": %s, "body": %s, "level": %s}' "$(kit_json_quote "$title")" \
            "$(kit_json_quote "$details")" "$(kit_json_quote "$level")")
    fi
    code=$(printf '%s' "$json" | kit_post "${NOTIFY_URL%/}/$KIT_HOST" application/json)
    if [ "$code" = 404 ]; then
        code=$(printf '%s' "$json" | kit_post "${NOTIFY_URL%/}" application/json)
    fi
    kit_http_outcome NOTIFY_URL "$code" notify
}

# Tell the heartbeat: POST $2 (the status line, may be empty) to HEARTBEAT_URL/<host>[/$1],
# where $1 is start, fail, bye or an exit status 0-255. Without HEARTBEAT_URL it does nothing.
kit_ping() {
    local suffix=${1:-} body=${2:-} url code
    [ -n "${HEARTBEAT_URL:-}" ] || return 0
    kit_identify
    url="${HEARTBEAT_URL%/}/$KIT_HOST${suffix:+/$suffix}"
    code=$(printf '%s' "$body" | kit_post "$url" 'text/plain; charset=utf-8')
    kit_http_outcome HEARTBEAT_URL "$code" "heartbeat ping ${suffix:-(plain)}"
}

# The two-way heartbeat: a plain ping with the status line $1 that asks for JSON, and what
# the answer says (kit_read_answer sets KIT_ANSWER and the rest). Without HEARTBEAT_URL there
# is no answer to read. Returns 1 when the ping did not get through.
kit_ping_read() {
    local body=${1:-} url out
    KIT_ANSWER=unreadable KIT_ANSWER_WHY="HEARTBEAT_URL is not set"
    [ -n "${HEARTBEAT_URL:-}" ] || return 0
    kit_identify
    url="${HEARTBEAT_URL%/}/$KIT_HOST"
    out=$(printf '%s' "$body" | curl -s -i --max-time "$KIT_HTTP_TIMEOUT" -X POST \
        -H 'Content-Type: text/plain; charset=utf-8' -H 'Accept: application/json' \
        --data-binary @- "$url" 2>/dev/null | head -c 65536 | tr -d '\000')
    kit_split_answer "$out"
    kit_read_answer "$KIT_ANSWER_CODE" "$KIT_ANSWER_DATE" "$KIT_ANSWER_BODY"
    kit_http_outcome HEARTBEAT_URL "$KIT_ANSWER_CODE" "heartbeat ping (plain)"
}

# curl -i's output $1 as KIT_ANSWER_CODE (000: none), KIT_ANSWER_DATE, KIT_ANSWER_BODY. Header
# blocks before the last — a proxy's "200 Connection established", a "100 Continue" — are
# skipped: the answer is the block the body follows.
kit_split_answer() {
    local rest=$1 head=""
    KIT_ANSWER_CODE=000 KIT_ANSWER_DATE="" KIT_ANSWER_BODY=""
    while [[ $rest == HTTP/*$'\r\n\r\n'* ]]; do
        head=${rest%%$'\r\n\r\n'*}
        rest=${rest#*$'\r\n\r\n'}
        [[ $rest == HTTP/* ]] || break
    done
    [[ $head =~ ^HTTP/[0-9.]+\ ([0-9]{3}) ]] || return 0
    KIT_ANSWER_CODE=${BASH_REMATCH[1]} KIT_ANSWER_BODY=$rest
    [[ $head =~ $'\n'[Dd][Aa][Tt][Ee]:[[:space:]]*([^$'\r\n']*) ]] && KIT_ANSWER_DATE=${BASH_REMATCH[1]}
    return 0
}

# Reads one answer of the two-way heartbeat: $1 the HTTP status, $2 its Date header, $3 the
# body, which must be {"ok": true, "keep_until": "<ISO>"|null, "idle_after":
# "<duration>"|"never"|null}. Sets KIT_ANSWER to ok or unreadable (KIT_ANSWER_WHY says why:
# anything else — an older reaper's "OK", an error, a field of another type — is unreadable,
# and the callers change nothing for it). For an ok answer: KIT_KEEP_MS, the keep's time left
# as the answer's own Date counts it (empty: no keep; the instance's clock is never compared
# with keep_until, since third-party hosts keep their own); KIT_KEEP_ISO and KIT_KEEP_TEXT
# ("until 2026-12-02 21:32 UTC", or "with no end set" past ten years: `--for forever`);
# KIT_IDLE_AFTER (milliseconds, never or default); KIT_SERVER_MS (the Date).
# python3 reads the body (KIT_ANSWER_PY); a body the same as the one before, under a Date
# read here, is not read again: the answer changes only when a keep or a limit is set.
# shellcheck disable=SC2034  # read by the scripts that source this file
kit_read_answer() {
    local code=$1 date=$2 body=$3 py line rest until_us left_us iso text
    KIT_ANSWER=unreadable KIT_KEEP_MS="" KIT_KEEP_ISO="" KIT_KEEP_TEXT=""
    KIT_IDLE_AFTER="" KIT_SERVER_MS=""
    if [ "$code" != 200 ]; then
        KIT_ANSWER_WHY="HTTP $code"
        return 0
    fi
    if [[ ! $body =~ ^[[:space:]]*\{ ]]; then
        KIT_ANSWER_WHY="not JSON: '${body:0:20}' (a reaper without the two-way heartbeat answers OK)"
        return 0
    fi
    if ! py=$(command -v python3 2>/dev/null); then
        KIT_ANSWER_WHY="python3 is not on this instance (it reads the JSON)"
        return 0
    fi
    if kit_fixdate_ms "$date"; then
        if [ "$body" != "$KIT_READ_BODY" ]; then
            KIT_READ_BODY="" KIT_READ_LINE=""
            line=$(printf '%s' "$body" | kit_timeout 10 "$py" -I -S -c "$KIT_ANSWER_PY" 2>/dev/null) &&
                KIT_READ_BODY=$body KIT_READ_LINE=$line
        fi
        line=$KIT_READ_LINE
    else
        line=$(printf '%s' "$body" | kit_timeout 10 "$py" -I -S -c "$KIT_ANSWER_PY" "$date" 2>/dev/null) ||
            line=""
    fi
    [ -n "$line" ] || line="unreadable|python3 failed reading it"
    IFS='|' read -r KIT_ANSWER rest <<<"$line"
    if [ "$KIT_ANSWER" != ok ]; then
        KIT_ANSWER=unreadable KIT_ANSWER_WHY=${rest:-no answer from python3}
        return 0
    fi
    IFS='|' read -r until_us KIT_IDLE_AFTER line iso text <<<"$rest"
    KIT_SERVER_MS=${KIT_DATE_MS:-$line}
    left_us=$((${until_us:-0} - KIT_SERVER_MS * 1000))
    if [ -n "$until_us" ] && ((left_us > 0)); then
        KIT_KEEP_MS=$((left_us / 1000)) KIT_KEEP_ISO=$iso KIT_KEEP_TEXT=$text
        ((left_us <= KIT_TEN_YEARS_MS * 1000)) || KIT_KEEP_TEXT="with no end set"
    fi
    KIT_ANSWER_WHY=""
}

# The IMF-fixdate $1 ("Wed, 02 Dec 2026 21:00:00 GMT", the form servers send) as
# milliseconds since the epoch in KIT_DATE_MS; returns 1, KIT_DATE_MS empty, for anything
# else (python3 reads the other forms HTTP allows) and for a day that does not exist.
kit_fixdate_ms() {
    local re='^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([1-9][0-9]{3}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT$'
    local months=JanFebMarAprMayJunJulAugSepOctNovDec before d m y hh mm ss last days
    KIT_DATE_MS=""
    [[ $1 =~ $re ]] || return 1
    before=${months%%"${BASH_REMATCH[3]}"*}
    d=$((10#${BASH_REMATCH[2]})) m=$((${#before} / 3 + 1)) y=$((10#${BASH_REMATCH[4]}))
    hh=$((10#${BASH_REMATCH[5]})) mm=$((10#${BASH_REMATCH[6]})) ss=$((10#${BASH_REMATCH[7]}))
    last=$((m == 2 ? 28 + (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) : 30 + ((m + m / 8) % 2)))
    ((d >= 1 && d <= last && hh <= 23 && mm <= 59 && ss <= 59)) || return 1
    # days since 1970-01-01 of a proleptic Gregorian date (a year counted from March)
    ((m > 2)) || y=$((y - 1))
    days=$((y * 365 + y / 4 - y / 100 + y / 400 + (153 * ((m + 9) % 12) + 2) / 5 + d - 719469))
    KIT_DATE_MS=$((((days * 24 + hh) * 60 + mm) * 60000 + ss * 1000))
}

# The last body python3 read under a Date read by kit_fixdate_ms, and what it said.
KIT_READ_BODY="" KIT_READ_LINE=""
KIT_TEN_YEARS_MS=$((3660 * 86400 * 1000))

# The reading of kit_read_answer, for python3 (standard library, 3.7 or later): the body on
# stdin, and $1 the Date when kit_fixdate_ms could not read it (else no $1 at all). Prints
# "ok|<keep_until in microseconds since the epoch>|<idle ms, never or default>|<Date ms, or
# empty>|<keep ISO>|<keep text>" (no keep: the keep fields empty) or "unreadable|<why>".
# Durations as reaper writes them: <int> + s/m/h/d/w, compounds (1h30m), above zero, ten
# years at most.
read -r -d '' KIT_ANSWER_PY <<'PY' || true
import json, re, sys
from datetime import datetime, timedelta, timezone

TEN_YEARS = 3660 * 86400
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def say(*fields):
    print("|".join(str(f) for f in fields))
    sys.exit(0)


def utc(moment):
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


date_ms = ""
if len(sys.argv) > 1:
    try:
        from email.utils import parsedate_to_datetime

        date_ms = int(utc(parsedate_to_datetime(sys.argv[1])).timestamp() * 1000)
    except Exception:
        say("unreadable", "no readable Date header")
try:
    data = json.loads(sys.stdin.read())
except Exception:
    say("unreadable", "not JSON")
if not isinstance(data, dict) or data.get("ok") is not True:
    say("unreadable", 'no "ok": true')
if "keep_until" not in data or "idle_after" not in data:
    say("unreadable", "keep_until or idle_after missing")
keep, idle = data["keep_until"], data["idle_after"]
until = iso = text = ""
if keep is not None:
    try:
        moment = utc(datetime.fromisoformat(keep.strip().replace("Z", "+00:00")))
        until = (moment - EPOCH) // timedelta(microseconds=1)
    except (AttributeError, ValueError, OverflowError):
        say("unreadable", "keep_until is not an ISO time")
    iso, text = moment.strftime("%Y-%m-%dT%H:%M:%SZ"), moment.strftime("until %Y-%m-%d %H:%M UTC")
if idle is None or idle == "never":
    limit = "default" if idle is None else "never"
elif isinstance(idle, str) and re.fullmatch(r"([0-9]{1,7}[smhdw])+", idle.strip().lower()):
    parts = re.findall(r"([0-9]+)([smhdw])", idle.strip().lower())
    seconds = sum(int(n) * UNITS[u] for n, u in parts)
    if not 0 < seconds <= TEN_YEARS:
        say("unreadable", "idle_after is out of range")
    limit = seconds * 1000
else:
    say("unreadable", "idle_after is not a duration")
say("ok", until, limit, date_ms, iso, text)
PY

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
# msg/error, DigitalOcean message), at most 200 characters; empty when there is none.
kit_error_detail() {
    local body=$1 field value
    for field in detail msg title error message; do
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
# bad key too: only error "not_found" is gone; DigitalOcean likewise, by its error's id. A
# RunPod destroy answers 204 (200 tolerated), a stop 200 with the pod; Vast answers
# {"success": true} to both; DigitalOcean 204 to a destroy and 201 to a power_off action.
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
    destroy:digitalocean:204 | stop:digitalocean:201) echo ok ;;
    *:digitalocean:401 | *:digitalocean:403) echo refused ;;
    *:digitalocean:404)
        if [[ $body =~ \"id\"[[:space:]]*:[[:space:]]*\"not_found\" ]]; then echo gone; else echo refused; fi
        ;;
    *) echo failed ;;
    esac
}

# Which instance to destroy ($1 = destroy) or stop ($1 = stop), and how: sets KIT_R_WHAT,
# KIT_R_URL, KIT_R_METHOD, KIT_R_BODY, KIT_R_HOW, KIT_R_KEYVARS (the variables holding a key
# for it, in the order they are tried), KIT_R_VERB and KIT_R_PAST. Returns 1, with
# KIT_DESTROY_MSG saying why, when the kit cannot tell which instance it is on.
#   RunPod: destroy = DELETE $RUNPOD_API_URL/pods/<id>, stop = POST .../action
#   {"action": "stop"}, with the pod-scoped RUNPOD_API_KEY, then REAPER_SELF_KEY;
#   Vast: destroy = DELETE $VAST_API_URL/api/v0/instances/<id>/, stop = PUT there
#   {"state": "stopped"}, with CONTAINER_API_KEY, then REAPER_SELF_KEY;
#   DigitalOcean: destroy = DELETE $DIGITALOCEAN_API_URL/droplets/<id>, stop = POST
#   .../actions {"type": "power_off"}, with the token the user gives it, DIGITALOCEAN_TOKEN.
kit_release_target() {
    local action=$1 id
    kit_identify
    id=$KIT_ID
    KIT_R_METHOD=DELETE KIT_R_BODY="" KIT_R_HOW=DELETE
    case $action in
    stop) KIT_R_PAST=stopped KIT_R_VERB=stopping ;;
    *) KIT_R_PAST=destroyed KIT_R_VERB=destroying ;;
    esac
    case $KIT_PROVIDER in
    runpod)
        KIT_R_WHAT="RunPod pod $id" KIT_R_URL="${RUNPOD_API_URL%/}/pods/$id"
        KIT_R_KEYVARS=(RUNPOD_API_KEY REAPER_SELF_KEY)
        if [ "$action" = stop ]; then
            KIT_R_METHOD=POST KIT_R_URL="$KIT_R_URL/action" KIT_R_BODY='{"action": "stop"}'
            KIT_R_HOW='POST .../action stop'
        fi
        ;;
    vast)
        KIT_R_WHAT="Vast instance $id" KIT_R_URL="${VAST_API_URL%/}/api/v0/instances/$id/"
        KIT_R_KEYVARS=(CONTAINER_API_KEY REAPER_SELF_KEY)
        if [ "$action" = stop ]; then
            KIT_R_METHOD=PUT KIT_R_BODY='{"state": "stopped"}' KIT_R_HOW='PUT state stopped'
        fi
        ;;
    digitalocean)
        KIT_R_WHAT="DigitalOcean droplet $id" KIT_R_URL="${DIGITALOCEAN_API_URL%/}/droplets/$id"
        KIT_R_KEYVARS=(DIGITALOCEAN_TOKEN)
        if [ "$action" = stop ]; then
            KIT_R_METHOD=POST KIT_R_URL="$KIT_R_URL/actions" KIT_R_BODY='{"type": "power_off"}'
            KIT_R_HOW='POST .../actions power_off' KIT_R_PAST="powered off" KIT_R_VERB="powering off"
        fi
        ;;
    *)
        KIT_DESTROY_MSG="cannot tell which instance this is (neither RUNPOD_POD_ID nor CONTAINER_ID is set, and no DigitalOcean metadata answered): not ${KIT_R_VERB}"
        return 1
        ;;
    esac
    if [[ ! $id =~ ^[A-Za-z0-9_-]{1,64}$ ]]; then
        KIT_DESTROY_MSG="the instance id '${id:0:64}' is not an id (letters, digits, - and _): not ${KIT_R_VERB}"
        return 1
    fi
    return 0
}

# Whether a destroy ($1 = destroy) or stop ($1 = stop) can be tried at all: the instance is
# known and a key for it is set. Calls nothing: the callers ask before they announce one, so
# that no notify claims a destroy the kit cannot attempt. KIT_DESTROY_MSG says why not.
kit_release_ready() {
    local var
    kit_release_target "${1:-destroy}" || return 1
    for var in "${KIT_R_KEYVARS[@]}"; do
        [ -n "${!var:-}" ] && return 0
    done
    local names=${KIT_R_KEYVARS[*]}
    KIT_DESTROY_MSG="no key to ${1:-destroy} $KIT_R_WHAT: set ${names// / or }"
    return 1
}

# Destroy ($1 = destroy, the default) or stop ($1 = stop) this instance (kit_release_target
# says how), each key in turn until one is not refused. Confirmed by the answer itself (see
# kit_release_outcome; a 404 "not found" = already gone). DRY_RUN=1 only says what it would
# do. Returns 0 when done or gone; KIT_DESTROY_MSG says what happened and with which key (the
# variable's name, never its value).
# shellcheck disable=SC2034  # KIT_DESTROY_MSG is read by the scripts that source this file
kit_release_self() {
    local action=${1:-destroy} var key outcome detail refusals="" tried=0 more i
    [ "$action" = stop ] || action=destroy
    kit_release_ready "$action" || return 1
    for ((i = 0; i < ${#KIT_R_KEYVARS[@]}; i++)); do
        var=${KIT_R_KEYVARS[i]}
        key=${!var:-}
        [ -n "$key" ] || continue
        if [ "${DRY_RUN:-0}" = 1 ]; then
            KIT_DESTROY_MSG="dry run: would $action $KIT_R_WHAT ($KIT_R_HOW with $var)"
            return 0
        fi
        more=0
        if [ "$i" -lt $((${#KIT_R_KEYVARS[@]} - 1)) ] && [ -n "${!KIT_R_KEYVARS[i + 1]:-}" ]; then
            more=1
        fi
        tried=1
        kit_http_send "$KIT_R_METHOD" "$KIT_R_URL" "$key" "$KIT_R_BODY"
        outcome=$(kit_release_outcome "$action" "$KIT_PROVIDER" "$KIT_HTTP_CODE" "$KIT_HTTP_BODY" "$more")
        detail=$(kit_error_detail "$KIT_HTTP_BODY")
        case $outcome in
        ok)
            KIT_DESTROY_MSG="$KIT_R_PAST $KIT_R_WHAT (HTTP $KIT_HTTP_CODE, with $var)"
            return 0
            ;;
        gone)
            KIT_DESTROY_MSG="$KIT_R_WHAT is already gone (HTTP $KIT_HTTP_CODE${detail:+: $detail}, with $var)"
            return 0
            ;;
        refused)
            refusals="$refusals${refusals:+; }$var refused (HTTP $KIT_HTTP_CODE${detail:+: $detail})"
            kit_log "$var refused (HTTP $KIT_HTTP_CODE)"
            ;;
        *)
            KIT_DESTROY_MSG="$KIT_R_VERB $KIT_R_WHAT failed (HTTP $KIT_HTTP_CODE${detail:+: $detail}, with $var)"
            return 1
            ;;
        esac
    done
    [ "$tried" = 1 ] || return 1
    KIT_DESTROY_MSG="$KIT_R_VERB $KIT_R_WHAT failed: $refusals"
    return 1
}

kit_destroy_self() {
    kit_release_self destroy
}

# Where a hold goes when KEEP_FILE cannot be written (off RunPod /workspace may not exist):
# idle-watch reads both.
kit_keep_fallback() {
    printf '%s\n' "${TMPDIR:-/tmp}/reaper-kit.keep"
}

# Hold idle-watch off for its hour: touch KEEP_FILE, else the fallback. Sets KIT_HOLD_NOTE to
# what was touched, or says that the hold failed; returns 1 then.
# shellcheck disable=SC2034  # KIT_HOLD_NOTE is read by the scripts that source this file
kit_hold() {
    local file
    for file in "$KEEP_FILE" "$(kit_keep_fallback)"; do
        if touch "$file" 2>/dev/null; then
            KIT_HOLD_NOTE="idle-watch holds off for 60 min ($file touched)"
            return 0
        fi
    done
    KIT_HOLD_NOTE="the hold FAILED: neither $KEEP_FILE nor $(kit_keep_fallback) can be written, so idle-watch does not wait its 60 min (it still keeps the instance while the results are not safe)"
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
