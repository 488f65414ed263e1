/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The unit harness judged (tests/unit/unit.h): a case that exits before it
 * returns, with 0 or with 1 (exit() in the code under test, a sanitizer's
 * report), or that checks nothing, or dies, is that case's FAIL; a case
 * whose checks pass is not.  Each inner case runs through unit_run() with
 * its lines sent to /dev/null and the counters put back, so only the
 * verdicts below reach run.sh.
 */
#include <fcntl.h>
#include <unistd.h>

#include "unit.h"

static void passes(void) { CHECK("inner-passes", true); }
static void fails(void) { CHECK("inner-fails", false); }
static void checks_nothing(void) {}
static void exits_zero(void) { CHECK("inner-before-exit", true); exit(0); }
static void exits_one(void) { exit(1); }
static void exits_one_after_check(void) { CHECK("inner-before-exit", true); exit(1); }
static void aborts(void) { abort(); }

/* 1: unit_run() counted @f as a failed case; 0: as passed; -1: neither. */
static int verdict(void (*f)(void))
{
	const struct unit_test t = { .name = "inner", .func = f };
	unsigned passed = unit_counts->passed, failed = unit_counts->failed;
	int out, null, v;

	fflush(stdout);
	out = dup(STDOUT_FILENO);
	null = open("/dev/null", O_WRONLY);
	if (out < 0 || null < 0 || dup2(null, STDOUT_FILENO) < 0)
		abort();
	unit_run(&t);
	fflush(stdout);
	dup2(out, STDOUT_FILENO);
	close(out);
	close(null);
	v = unit_counts->failed > failed ? 1 : unit_counts->passed > passed ? 0 : -1;
	unit_counts->passed = passed;
	unit_counts->failed = failed;
	return v;
}

UNIT_TEST(passing_case_passes) { CHECK_EQ("harness-passing-case-passes", verdict(passes), 0); }
UNIT_TEST(failing_case_fails) { CHECK_EQ("harness-failing-case-fails", verdict(fails), 1); }
UNIT_TEST(empty_case_fails) { CHECK_EQ("harness-case-checking-nothing-fails", verdict(checks_nothing), 1); }
UNIT_TEST(exit_zero_fails) { CHECK_EQ("harness-exit-0-inside-a-case-fails", verdict(exits_zero), 1); }
UNIT_TEST(exit_one_fails) { CHECK_EQ("harness-exit-1-without-a-fail-line-fails", verdict(exits_one), 1); }
UNIT_TEST(exit_one_after_check_fails)
{
	CHECK_EQ("harness-exit-1-after-a-pass-fails", verdict(exits_one_after_check), 1);
}
UNIT_TEST(abort_fails) { CHECK_EQ("harness-abort-fails", verdict(aborts), 1); }

UNIT_MAIN()
