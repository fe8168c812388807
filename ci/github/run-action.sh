#!/usr/bin/env bash
# The run step of the GitHub Action (action.yml): its inputs arrive as AMP_INPUT_* variables. Exactly one
# target, or `self-test: true` alone: an empty target input (a typo, an unset secret) must not turn
# into a green self-test of the bundled server. Exit code: the suite's (2 for a wrong set of inputs).
set -uo pipefail

fail() {
    echo "::error title=amp-conformance::$1"
    if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "exit-code=2" >>"$GITHUB_OUTPUT"; fi
    exit 2
}

targets=()
named=()
for pair in "base-url:${AMP_INPUT_BASE_URL:-}" "server-cmd:${AMP_INPUT_SERVER_CMD:-}" \
    "mcp-command:${AMP_INPUT_MCP_COMMAND:-}" "app:${AMP_INPUT_APP:-}"; do
    name=${pair%%:*}
    value=${pair#*:}
    if [ -n "${value//[[:space:]]/}" ]; then
        targets+=("--$name" "$value")
        named+=("$name")
    fi
done
self_test=$(echo "${AMP_INPUT_SELF_TEST:-false}" | tr '[:upper:]' '[:lower:]')
case "$self_test" in
    true | false) ;;
    *) fail "self-test must be true or false, not '${AMP_INPUT_SELF_TEST:-}'" ;;
esac
# base-url goes with server-cmd (a fixed port or a path prefix); any other pair is ambiguous
together=" ${named[*]:-} "
if [ "$self_test" = true ] && [ ${#named[@]} -gt 0 ]; then
    fail "self-test: true and a target (${named[*]}) were both given; give one of them"
elif [ "$self_test" = false ] && [ ${#named[@]} -eq 0 ]; then
    fail "no target: give one of base-url, server-cmd, mcp-command, app (they are all empty), or self-test: true"
elif [ ${#named[@]} -gt 1 ] && [ "$together" != " base-url server-cmd " ]; then
    fail "more than one target (${named[*]}): give one (base-url may go with server-cmd)"
fi

arguments=("${targets[@]}")
add() { [ -n "$2" ] && arguments+=("$1" "$2"); }
add --protocol "${AMP_INPUT_PROTOCOL:-}"
add --expectations "${AMP_INPUT_EXPECTATIONS:-}"
add --workers "${AMP_INPUT_WORKERS:-}"
add --level "${AMP_INPUT_LEVEL:-}"
add --only "${AMP_INPUT_ONLY:-}"
while IFS= read -r line; do
    line=${line#"${line%%[![:space:]]*}"}
    [ -n "$line" ] && arguments+=(--server-env "$line")
done <<<"${AMP_INPUT_SERVER_ENV:-}"
if [ -n "${AMP_INPUT_ARGS:-}" ]; then
    split=$(mktemp)
    python -c 'import shlex, sys; sys.stdout.write("".join(a + "\0" for a in shlex.split(sys.argv[1])))' \
        "$AMP_INPUT_ARGS" >"$split" || fail "args: cannot be split like a shell would: ${AMP_INPUT_ARGS}"
    mapfile -d '' -t extra <"$split"
    rm -f "$split"
    arguments+=("${extra[@]}")
fi
paths=()
for pair in "json:${AMP_INPUT_JSON:-}" "junit:${AMP_INPUT_JUNIT:-}" "markdown:${AMP_INPUT_MARKDOWN:-}" \
    "html:${AMP_INPUT_HTML:-}" "badge:${AMP_INPUT_BADGE:-}"; do
    if [ -n "${pair#*:}" ]; then
        arguments+=("--${pair%%:*}" "${pair#*:}")
        paths+=("${pair#*:}")
    fi
done
if [ -n "${GITHUB_OUTPUT:-}" ] && [ ${#paths[@]} -gt 0 ]; then
    # before the run: the upload step keeps whatever the run wrote, also when it fails
    { echo "paths<<AMP_PATHS_END"; printf '%s\n' "${paths[@]}"; echo "AMP_PATHS_END"; } >>"$GITHUB_OUTPUT"
fi
if [ "$(echo "${AMP_INPUT_STEP_SUMMARY:-true}" | tr '[:upper:]' '[:lower:]')" != true ]; then
    unset GITHUB_STEP_SUMMARY # the suite appends its summary to the step summary when this is set
fi

unset "${!AMP_INPUT_@}" # the started server inherits this environment: keep it to what it had
amp-conformance "${arguments[@]}"
code=$?
[ -n "${GITHUB_OUTPUT:-}" ] && echo "exit-code=$code" >>"$GITHUB_OUTPUT"
exit "$code"
