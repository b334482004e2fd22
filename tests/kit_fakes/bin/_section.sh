# shellcheck shell=bash
# Shared by the fake tools: this check's section of $KIT_FAKE_DIR/<tool>.txt. Sections are
# separated by a line "---"; section N serves idle-watch's check N (IDLE_WATCH_LOOP, 1
# outside idle-watch); the last section repeats. A section whose first line is "!exit N"
# makes the tool exit N after printing the rest. Every call is logged to calls.log.
# Pure bash (no awk, no basename): the fakes run several times per check.
set -u
fake_tool=${0##*/}
printf '%s %s\n' "$fake_tool" "$*" >>"$KIT_FAKE_DIR/calls.log"

# Sets FAKE_TEXT (the section, without its "!exit N" line) and FAKE_STATUS.
fake_section() {
    local file="$KIT_FAKE_DIR/$fake_tool.txt" want=${IDLE_WATCH_LOOP:-1} n=1 line
    local -a sections=("" "")
    FAKE_TEXT=""
    FAKE_STATUS=0
    [ -f "$file" ] || return 0
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "$line" = --- ]; then
            n=$((n + 1))
            sections[n]=""
        else
            sections[n]+="$line"$'\n'
        fi
    done <"$file"
    ((want > n)) && want=$n
    FAKE_TEXT=${sections[want]}
    if [[ $FAKE_TEXT =~ ^\!exit\ ([0-9]+)$'\n' ]]; then
        FAKE_STATUS=${BASH_REMATCH[1]}
        FAKE_TEXT=${FAKE_TEXT#*$'\n'}
    fi
}

# Prints the section and exits with its status.
fake_reply() {
    fake_section
    printf '%s' "$FAKE_TEXT"
    exit "$FAKE_STATUS"
}
