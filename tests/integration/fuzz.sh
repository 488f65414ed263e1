#!/bin/bash
# Every fuzz target for a few seconds (tests/fuzz/run-brief.sh): the suite
# fails on any crash, sanitizer report or broken contract.  `make fuzz`
# runs them longer.
[ -n "${MODSIGN_IN_SANITIZERS:-}" ] && exit 0 # not again under sanitizers.sh
export FUZZ_SECONDS=${FUZZ_SECONDS:-10}
exec "$(dirname "$0")/../fuzz/run-brief.sh"
