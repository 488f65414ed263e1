/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_TESTS_UNIT_H
#define MODSIGN_TESTS_UNIT_H

/*
 * The unit-test harness, shaped after kmod's testsuite (DEFINE_TEST): a
 * test file is a list of named cases, each registered where it is
 * defined and each run in its own process.
 *
 *   UNIT_TEST(hex_roundtrip) { CHECK("hex: ...", ...); }
 *   ...
 *   UNIT_MAIN(.setup = fixture, .teardown = fixture_free);
 *
 * Every check prints exactly one line that tests/run.sh counts:
 *
 *   PASS <name>
 *   FAIL <name>: <file>:<line>
 *
 * Diagnostics go on following lines starting with "#", which run.sh
 * ignores.  A case that dies (a signal, abort(), an exit before it
 * returned: exit() in the code under test, a sanitizer's report), runs
 * longer than UNIT_TIMEOUT_S, or checks nothing is reported
 * as "FAIL <case>: ..." and the cases after it still run.  The exit status
 * is non-zero if any check or case failed, or none passed.
 *
 *   test-NAME               every case, in the order of the file
 *   test-NAME CASE...       only those (an unknown name is an error)
 *   test-NAME --list        the cases' names, one a line
 *
 * A file's fixture (.setup) runs once, in the parent, before the first
 * case: a key made once, a scratch directory.  Every case inherits it as
 * it was then, and nothing a case changes (memory, descriptors' state
 * aside) reaches the next one.  .teardown runs in the parent after the
 * last case; .setup may CHECK, and returning false fails the file (its
 * cases are then reported SKIP).
 *
 * The older shape (a main() calling the checks, then unit_summary())
 * still builds: CHECK, CHECK_EQ and unit_summary are unchanged.
 */

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* A case that has not finished after this long is killed and failed. */
#define UNIT_TIMEOUT_S 120

/* Counters in memory shared with the cases' processes, so that the
 * parent's summary counts the checks its children made. */
struct unit_counts {
	unsigned passed, failed;
	/* Set by a case's process when its function has returned: an exit
	 * before that (exit() in the code under test, a sanitizer's report
	 * with its default exit status 1) is never taken for the case's own. */
	bool returned;
};

static struct unit_counts unit_local_counts, *unit_counts = &unit_local_counts;

/* Kept for files in the older shape, which read them directly. */
#define unit_passed (unit_counts->passed)
#define unit_failed (unit_counts->failed)

static inline bool unit_check(bool ok, const char *name, const char *file,
			      int line)
{
	if (ok) {
		printf("PASS %s\n", name);
		unit_counts->passed++;
	} else {
		printf("FAIL %s: %s:%d\n", name, file, line);
		unit_counts->failed++;
	}
	fflush(stdout);
	return ok;
}

/* CHECK(name, cond): one line of output; evaluates to cond. */
#define CHECK(name, cond) unit_check(!!(cond), (name), __FILE__, __LINE__)

/* CHECK_EQ(name, got, want): as CHECK(got == want), printing both on
 * failure.  Arguments are evaluated once. */
#define CHECK_EQ(name, got, want)                                              \
	({                                                                     \
		long long got_ = (long long)(got), want_ = (long long)(want); \
		bool ok_ = unit_check(got_ == want_, (name), __FILE__,        \
				      __LINE__);                               \
		if (!ok_)                                                      \
			printf("#   got %lld, want %lld\n", got_, want_);      \
		ok_;                                                           \
	})

static inline int unit_summary(const char *suite)
{
	printf("# %s: %u passed, %u failed\n", suite, unit_counts->passed,
	       unit_counts->failed);
	return unit_counts->failed == 0 && unit_counts->passed > 0 ? 0 : 1;
}

/* ---- fixtures' helpers ---- */

/* mkdtemp(@tmpl) for a fixture, saying why not on a "#" line. */
static inline bool unit_mkdtemp(char *tmpl)
{
	if (mkdtemp(tmpl))
		return true;
	printf("# mkdtemp %s: %s\n", tmpl, strerror(errno));
	return false;
}

/* Removes a fixture's scratch directory and all below it; one left
 * behind in /tmp fails nothing, so it is only said. */
static inline void unit_rm_rf(const char *dir)
{
	char cmd[4096 + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
}

/* ---- named cases ---- */

struct unit_test {
	const char *name;
	void (*func)(void);
	int line; /* the order of the file, whatever the linker's */
};

struct unit_suite {
	bool (*setup)(void);
	void (*teardown)(void);
};

/*
 * UNIT_TEST(name) { body }: defines the case and registers it in the
 * "unit_tests" section, which the linker gathers between
 * __start_unit_tests and __stop_unit_tests (as kmod's DEFINE_TEST does
 * with its own section).
 */
#define UNIT_TEST(name_)                                                       \
	static void unit_case_##name_(void);                                   \
	static const struct unit_test unit_test_##name_                        \
		__attribute__((used, section("unit_tests"), aligned(8))) = {   \
			.name = #name_,                                        \
			.func = unit_case_##name_,                             \
			.line = __LINE__,                                      \
		};                                                             \
	static void unit_case_##name_(void)

extern const struct unit_test __start_unit_tests[] __attribute__((weak));
extern const struct unit_test __stop_unit_tests[] __attribute__((weak));

static inline int unit_by_line(const void *a, const void *b)
{
	const struct unit_test *const *x = a, *const *y = b;

	return (*x)->line - (*y)->line;
}

/* The registered cases in the order of the file, into @ret (n slots). */
static inline size_t unit_cases(const struct unit_test **ret, size_t n)
{
	size_t i = 0;

	for (const struct unit_test *t = __start_unit_tests;
	     t < __stop_unit_tests && i < n; t++)
		ret[i++] = t;
	qsort(ret, i, sizeof(*ret), unit_by_line);
	return i;
}

static inline const struct unit_test *unit_find(const struct unit_test **all,
					 size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}

/* In the case's own process: its checks, then an exit status that says
 * whether they all passed (1: a FAIL line is already out; 2: nothing
 * was checked). */
static inline void __attribute__((noreturn)) unit_child(const struct unit_test *t)
{
	unsigned before = unit_counts->passed + unit_counts->failed;
	unsigned failed = unit_counts->failed;

	alarm(UNIT_TIMEOUT_S);
	t->func();
	fflush(stdout);
	unit_counts->returned = true;
	if (unit_counts->failed != failed)
		exit(1);
	exit(unit_counts->passed + unit_counts->failed == before ? 2 : 0);
}

/* One case in a fork; a death or an exit status that no FAIL line
 * explains is reported as that case's FAIL. */
static inline void unit_run(const struct unit_test *t)
{
	unsigned failed = unit_counts->failed;
	int status;
	pid_t pid;

	unit_counts->returned = false;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		printf("FAIL %s: fork: %s\n", t->name, strerror(errno));
		unit_counts->failed++;
		return;
	}
	if (pid == 0)
		unit_child(t);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -1;
			break;
		}
	/* 0 and 1 are the case's word only from unit_child(), after the case
	 * returned, and 1 only with a FAIL line out. */
	if (WIFEXITED(status) && unit_counts->returned &&
	    (WEXITSTATUS(status) == 0 ||
	     (WEXITSTATUS(status) == 1 && unit_counts->failed != failed)))
		return;
	if (WIFSIGNALED(status))
		printf("FAIL %s: killed by signal %d (%s)\n", t->name,
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && unit_counts->returned)
		printf("FAIL %s: no check ran\n", t->name);
	else if (WIFEXITED(status) && !unit_counts->returned)
		printf("FAIL %s: exited with status %d before its checks ended\n", t->name,
		       WEXITSTATUS(status));
	else
		printf("FAIL %s: exited with status %d\n", t->name,
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	unit_counts->failed++;
	fflush(stdout);
}

static inline int unit_usage(const char *prog, const struct unit_test **all, size_t n)
{
	fprintf(stderr, "usage: %s [--list] [CASE...]\ncases:", prog);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %s", all[i]->name);
	fputc('\n', stderr);
	return 2;
}

static inline int unit_main(int argc, char **argv, const struct unit_suite *suite)
{
	size_t n = (size_t)(__stop_unit_tests - __start_unit_tests), nsel = 0;
	/* Static: still reachable (for LeakSanitizer) when a case exits. */
	static const struct unit_test **all, **sel;
	int rc;

	all = calloc(n + 1, sizeof(*all));
	sel = calloc(n + (size_t)argc, sizeof(*sel));
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	struct unit_counts *shared;

	if (!all || !sel) {
		printf("FAIL %s: out of memory\n", prog);
		return 1;
	}
	n = unit_cases(all, n);
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", all[i]->name);
		free(all);
		free(sel);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		sel[nsel] = unit_find(all, n, argv[i]);
		if (!sel[nsel++]) {
			fprintf(stderr, "%s: no case named '%s'\n", prog, argv[i]);
			rc = unit_usage(prog, all, n);
			free(all);
			free(sel);
			return rc;
		}
	}
	if (argc == 1)
		for (nsel = 0; nsel < n; nsel++)
			sel[nsel] = all[nsel];

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED) {
		printf("FAIL %s: mmap: %s\n", prog, strerror(errno));
		return 1;
	}
	unit_counts = shared;

	if (suite->setup && !suite->setup()) {
		printf("FAIL %s: fixture\n", prog);
		unit_counts->failed++;
		for (size_t i = 0; i < nsel; i++)
			printf("SKIP %s: no fixture\n", sel[i]->name);
	} else {
		for (size_t i = 0; i < nsel; i++)
			unit_run(sel[i]);
	}
	if (suite->teardown)
		suite->teardown();
	rc = unit_summary(prog);
	free(all);
	free(sel);
	return rc;
}

/* UNIT_MAIN(.setup = f, .teardown = g): the file's main(), running its
 * cases; both members optional. */
#define UNIT_MAIN(...)                                                         \
	int main(int argc, char **argv)                                        \
	{                                                                      \
		static const struct unit_suite suite_ = { __VA_ARGS__ };       \
		return unit_main(argc, argv, &suite_);                         \
	}

#endif
