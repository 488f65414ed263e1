/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsignd/options.c, linked as an object (with policy.o and log.o): the
 * command line and modsignd.conf(5), a single-valued option given twice
 * (in the file, on the command line), the command line overriding the
 * file, unknown settings, number limits, repeatable options,
 * --check-config, and the SIGHUP re-read of the allow rules.  Each error
 * is checked with the one line the daemon logs for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "unit.h"
#include "util.h"

static char dir[] = "/tmp/modsign-test-options-XXXXXX";
static char conf[sizeof(dir) + 32];
static char logged[4096]; /* what the last parse wrote to stderr */
static struct options o;

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		printf("# cannot write %s\n", conf);
}

/* Run @fn with stdout and stderr in a file, which ends in logged[]. */
static int captured(int (*fn)(void *), void *arg)
{
	char path[sizeof(dir) + 16];
	int saved_out = dup(1), saved_err = dup(2), fd, r;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stderr", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fflush(stdout);
	dup2(fd, 1);
	dup2(fd, 2);
	r = fn(arg);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	n = pread(fd, logged, sizeof(logged) - 1, 0);
	logged[n > 0 ? n : 0] = '\0';
	close(fd);
	return r;
}

struct argv {
	int argc;
	char **argv;
};

static int run_parse(void *p)
{
	struct argv *a = p;

	return options_parse(a->argc, a->argv, &o);
}

/* options_parse() of "modsignd" and the NULL-terminated arguments. */
static int parse(const char *first, ...)
{
	char *argv[64] = { (char *)"modsignd" };
	struct argv a = { 1, argv };
	va_list ap;

	options_free(&o);
	va_start(ap, first);
	for (const char *s = first; s && a.argc < 63; s = va_arg(ap, const char *))
		argv[a.argc++] = (char *)s;
	va_end(ap);
	return captured(run_parse, &a);
}
#define PARSE(...) parse(__VA_ARGS__, (const char *)NULL)

/* Refused with -EINVAL (or @err) and a log line that contains @why. */
static void refused(const char *name, int r, int want, const char *why)
{
	if (!CHECK(name, r == want && strstr(logged, why)))
		printf("#   got %d, logged: %s#   want %d, \"%s\"\n", r, logged, want, why);
}

UNIT_TEST(cli)
{
	CHECK_EQ("--key alone parses", PARSE("--key", "k=ephemeral"), 0);
	CHECK("defaults: socket mode, timeouts, days, no config",
	      o.server.socket_mode == 0660 && o.server.handshake_timeout == 10 &&
		      o.server.idle_timeout == 60 && o.gen.days == 36500 && !o.config &&
		      !o.check_config && o.n_listen == 0 && !o.audit_log &&
		      o.server.max_conns == SERVER_DEFAULT_MAX_CONNS);
	CHECK_EQ("--key=VALUE form parses",
		 PARSE("--key=k=ephemeral", "--workers=4", "--socket-mode", "0600",
		       "--days", "1", "--audit-log", "/tmp/a"), 0);
	CHECK("values applied", o.n_keys == 1 && strcmp(o.keys[0], "k=ephemeral") == 0 &&
					o.server.workers == 4 && o.server.socket_mode == 0600 &&
					o.gen.days == 1 && strcmp(o.audit_log, "/tmp/a") == 0);
	CHECK_EQ("every option parses",
		 PARSE("--key", "k=ephemeral", "--listen", "unix:/tmp/s", "--allow", "uid:1",
		       "--cert", "k=/c.pem", "--pin-file", "/p", "--pkcs11-module", "/m.so",
		       "--organization", "O", "--common-name", "CN", "--email", "e@x",
		       "--genkey-template", "/t", "--tls-cert", "/tc", "--tls-key", "/tk",
		       "--tls-client-ca", "/ca", "--max-connections", "10", "--max-handshakes",
		       "5", "--max-handshakes-per-source", "2", "--handshake-timeout", "3",
		       "--idle-timeout", "4", "--handshake-rate", "6", "--handshake-burst", "7",
		       "--max-connections-per-source", "8", "--max-connections-per-identity", "9"),
		 0);
	CHECK("every value applied",
	      o.n_listen == 1 && o.n_allow == 1 && o.n_certs == 1 &&
		      strcmp(o.pin_file, "/p") == 0 && strcmp(o.pkcs11_module, "/m.so") == 0 &&
		      strcmp(o.gen.organization, "O") == 0 &&
		      strcmp(o.gen.common_name, "CN") == 0 && strcmp(o.gen.email, "e@x") == 0 &&
		      strcmp(o.gen.template_path, "/t") == 0 && strcmp(o.tls.cert, "/tc") == 0 &&
		      strcmp(o.tls.key, "/tk") == 0 && strcmp(o.tls.client_ca, "/ca") == 0 &&
		      o.server.max_conns == 10 && o.server.max_handshakes == 5 &&
		      o.server.max_handshakes_per_source == 2 &&
		      o.server.handshake_timeout == 3 && o.server.idle_timeout == 4 &&
		      o.server.handshake_rate == 6 && o.server.handshake_burst == 7 &&
		      o.server.max_conns_per_source == 8 && o.server.max_conns_per_identity == 9);

	refused("no --key", PARSE("--workers", "2"), -EINVAL,
		"modsignd: no keys: give at least one --key\n");
	refused("unknown option", PARSE("--key", "k=ephemeral", "--nope"), -EINVAL,
		"unrecognized option '--nope'");
	refused("option without its value", PARSE("--key"), -EINVAL,
		"option '--key' requires an argument");
	refused("a flag with a value", PARSE("--key", "k=ephemeral", "--check-config=yes"),
		-EINVAL, "doesn't allow an argument");
	refused("a stray argument", PARSE("--key", "k=ephemeral", "extra"), -EINVAL,
		"modsignd: unexpected argument 'extra'\n");
	refused("a short option", PARSE("--key", "k=ephemeral", "-k"), -EINVAL,
		"invalid option -- 'k'");

	CHECK_EQ("--help returns 1", PARSE("--help"), 1);
	CHECK("--help lists every option", strstr(logged, "Usage: modsignd [OPTIONS]") &&
						   strstr(logged, "--idle-timeout SECS") &&
						   strstr(logged, "--check-config "));
	CHECK_EQ("--version returns 1", PARSE("--version"), 1);
	CHECK("--version prints the version", strcmp(logged, "modsignd " MODSIGN_VERSION "\n") == 0);
}

UNIT_TEST(twice_cli)
{
	static const char *const single[] = {
		"--pin-file", "--pkcs11-module", "--audit-log", "--organization",
		"--common-name", "--email", "--genkey-template", "--tls-cert", "--tls-key",
		"--tls-client-ca", "--config",
	};
	char name[96], want[128];

	for (size_t i = 0; i < ELEMENTSOF(single); i++) {
		snprintf(name, sizeof(name), "%s twice on the command line", single[i]);
		snprintf(want, sizeof(want),
			 "modsignd: %s given twice on the command line; it takes one value\n",
			 single[i]);
		refused(name, PARSE("--key", "k=ephemeral", single[i], "/a", single[i], "/b"),
			-EINVAL, want);
	}
	refused("--workers twice on the command line",
		PARSE("--key", "k=ephemeral", "--workers", "2", "--workers=2"), -EINVAL,
		"--workers given twice on the command line; it takes one value");
	refused("--socket-mode twice on the command line",
		PARSE("--key", "k=ephemeral", "--socket-mode", "0600", "--socket-mode", "0600"),
		-EINVAL, "--socket-mode given twice");
	/* Twins: the repeatable ones, and --check-config, a flag. */
	CHECK_EQ("--key, --listen, --allow, --cert repeat",
		 PARSE("--key", "a=ephemeral", "--key", "b=ephemeral", "--listen", "unix:/1",
		       "--listen", "unix:/2", "--allow", "uid:1", "--allow", "uid:2", "--cert",
		       "a=/a", "--cert", "b=/b"), 0);
	CHECK("repeated values kept in order",
	      o.n_keys == 2 && strcmp(o.keys[1], "b=ephemeral") == 0 && o.n_listen == 2 &&
		      strcmp(o.listen[0], "unix:/1") == 0 && o.n_allow == 2 && o.n_certs == 2);
}

UNIT_TEST(numbers)
{
	static const struct {
		const char *opt, *v;
		bool ok;
		const char *why;
	} cases[] = {
		{ "--workers", "1", true, NULL },
		{ "--workers", "256", true, NULL },
		{ "--workers", "257", false, "workers: '257' is not a number from 1 to 256" },
		{ "--workers", "0", false, "workers: '0' is not a number from 1 to 256" },
		{ "--workers", "-1", false, "workers: '-1' is not a number from 1 to 256" },
		{ "--workers", "4x", false, "workers: '4x' is not a number from 1 to 256" },
		{ "--workers", "", false, "workers: '' is not a number from 1 to 256" },
		{ "--days", "73000", true, NULL },
		{ "--days", "73001", false, "days: '73001' is not a number from 1 to 73000" },
		{ "--max-connections", "65536", true, NULL },
		{ "--max-connections", "65537", false, "max-connections: '65537' is not a number from 1 to 65536" },
		{ "--max-handshakes", "65536", true, NULL },
		{ "--max-handshakes", "65537", false, "max-handshakes: '65537' is not" },
		{ "--max-handshakes-per-source", "65536", true, NULL },
		{ "--max-handshakes-per-source", "0", false, "max-handshakes-per-source: '0' is not" },
		{ "--handshake-rate", "100000", true, NULL },
		{ "--handshake-rate", "0", false, "handshake-rate: '0' is not a number from 1 to 100000" },
		{ "--handshake-burst", "100001", false, "handshake-burst: '100001' is not" },
		{ "--max-connections-per-identity", "0", false, "max-connections-per-identity: '0' is not" },
		{ "--max-connections-per-source", "65537", false, "max-connections-per-source: '65537' is not" },
		{ "--handshake-timeout", "3600", true, NULL },
		{ "--handshake-timeout", "3601", false, "handshake-timeout: '3601' is not a number from 1 to 3600" },
		{ "--idle-timeout", "86400", true, NULL },
		{ "--idle-timeout", "86401", false, "idle-timeout: '86401' is not a number from 1 to 86400" },
		{ "--socket-mode", "0777", true, NULL },
		{ "--socket-mode", "600", true, NULL },
		{ "--socket-mode", "0", true, NULL },
		{ "--socket-mode", "01000", false, "socket-mode: '01000' is not an octal mode" },
		{ "--socket-mode", "0680", false, "socket-mode: '0680' is not an octal mode" },
		{ "--socket-mode", "rw", false, "socket-mode: 'rw' is not an octal mode" },
		{ "--socket-mode", "", false, "socket-mode: '' is not an octal mode" },
	};
	char name[96];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		int r = PARSE("--key", "k=ephemeral", cases[i].opt, cases[i].v);

		snprintf(name, sizeof(name), "%s '%s' %s", cases[i].opt, cases[i].v,
			 cases[i].ok ? "accepted" : "refused");
		if (cases[i].ok)
			CHECK_EQ(name, r, 0);
		else
			refused(name, r, -EINVAL, cases[i].why);
	}
	PARSE("--key", "k=ephemeral", "--socket-mode", "640", "--days", "73000");
	CHECK("socket-mode is octal, days decimal",
	      o.server.socket_mode == 0640 && o.gen.days == 73000);

	/* OPTIONS_MAX_LIST values of a repeatable option, and one more. */
	char *argv[2 * OPTIONS_MAX_LIST + 8] = { (char *)"modsignd" };
	char vals[OPTIONS_MAX_LIST + 1][16];
	struct argv a = { 1, argv };
	for (int i = 0; i <= OPTIONS_MAX_LIST; i++) {
		snprintf(vals[i], sizeof(vals[i]), "k%d=ephemeral", i);
		argv[a.argc++] = (char *)"--key";
		argv[a.argc++] = vals[i];
	}
	a.argc -= 2;
	options_free(&o);
	CHECK_EQ("64 --key parse", captured(run_parse, &a), 0);
	CHECK_EQ("64 keys kept", o.n_keys, OPTIONS_MAX_LIST);
	a.argc += 2;
	refused("65 --key", captured(run_parse, &a), -EINVAL,
		"too many values for a repeatable option");
}

UNIT_TEST(file)
{
	write_conf("# modsignd.conf\n"
		   "\n"
		   "key = k1=ephemeral\n"
		   "  key=k2=ephemeral:ecdsa-p256  \n"
		   "listen = unix:/run/a.sock\n"
		   "allow = uid:1000=k1\n"
		   "allow = gid:50\n"
		   "workers = 3\n"
		   "audit-log = /var/log/a log\n"
		   "socket-mode = 0600\n");
	CHECK_EQ("a config file parses", PARSE("--config", conf), 0);
	CHECK("its values, trimmed, in order",
	      o.n_keys == 2 && strcmp(o.keys[0], "k1=ephemeral") == 0 &&
		      strcmp(o.keys[1], "k2=ephemeral:ecdsa-p256") == 0 && o.n_listen == 1 &&
		      o.n_allow == 2 && strcmp(o.allow[1], "gid:50") == 0 &&
		      o.server.workers == 3 && strcmp(o.audit_log, "/var/log/a log") == 0 &&
		      o.server.socket_mode == 0600 && strcmp(o.config, conf) == 0);
	CHECK("the file's allow rules are counted", o.n_allow_conf == 2);

	/* The command line after the file: repeatable ones add, single ones
	 * override once. */
	CHECK_EQ("file and command line parse",
		 PARSE("--config", conf, "--allow", "uid:7", "--key", "k3=ephemeral",
		       "--workers", "9", "--audit-log", "/cli"), 0);
	CHECK("the command line adds to repeatable options",
	      o.n_keys == 3 && strcmp(o.keys[2], "k3=ephemeral") == 0 && o.n_allow == 3 &&
		      o.n_allow_conf == 2 && strcmp(o.allow[2], "uid:7") == 0);
	CHECK("the command line overrides a single option",
	      o.server.workers == 9 && strcmp(o.audit_log, "/cli") == 0);
	CHECK("what it does not override stays", o.server.socket_mode == 0600);
	/* The config file's own path may come after the options it overrides. */
	CHECK_EQ("--config after the options parses",
		 PARSE("--workers", "9", "--config", conf), 0);
	CHECK("...and still overrides", o.server.workers == 9);
	refused("the command line overrides once, not twice",
		PARSE("--config", conf, "--workers", "9", "--workers", "8"), -EINVAL,
		"--workers given twice on the command line; it takes one value");

	char want[256];
	write_conf("key = k=ephemeral\nworkers = 2\n# comment\nworkers = 2\n");
	snprintf(want, sizeof(want),
		 "modsignd: %s:4: 'workers' given twice (first on line 2); it takes one value\n",
		 conf);
	refused("a single option twice in the file", PARSE("--config", conf), -EINVAL, want);
	write_conf("key = k=ephemeral\naudit-log = /a\naudit-log = /b\n");
	refused("audit-log twice in the file", PARSE("--config", conf, "--audit-log", "/c"),
		-EINVAL, "'audit-log' given twice (first on line 2)");
	write_conf("key = k=ephemeral\nkey = j=ephemeral\nallow = uid:1\nallow = uid:1\n");
	CHECK_EQ("repeatable options twice in the file parse", PARSE("--config", conf), 0);

	write_conf("key = k=ephemeral\nnope = 1\n");
	snprintf(want, sizeof(want), "modsignd: %s: unknown setting 'nope'\n", conf);
	refused("an unknown setting", PARSE("--config", conf), -ENOENT, want);
	static const char *const not_settings[] = { "config", "check-config", "help", "version" };
	for (size_t i = 0; i < ELEMENTSOF(not_settings); i++) {
		char text[128], name[64];

		snprintf(text, sizeof(text), "key = k=ephemeral\n%s = x\n", not_settings[i]);
		write_conf(text);
		snprintf(name, sizeof(name), "'%s' is not a file setting", not_settings[i]);
		snprintf(want, sizeof(want), "unknown setting '%s'", not_settings[i]);
		refused(name, PARSE("--config", conf), -ENOENT, want);
	}
	write_conf("key = k=ephemeral\naudit-log =\n");
	snprintf(want, sizeof(want), "modsignd: %s: 'audit-log' needs a value\n", conf);
	refused("a setting without a value", PARSE("--config", conf), -EINVAL, want);
	write_conf("key = k=ephemeral\nworkers 4\n");
	snprintf(want, sizeof(want), "modsignd: %s:2: expected 'key = value'\n", conf);
	refused("a line without '='", PARSE("--config", conf), -EBADMSG, want);
	write_conf("key = k=ephemeral\nWorkers = 4\n");
	refused("an upper-case key", PARSE("--config", conf), -EBADMSG,
		":2: expected 'key = value'");
	write_conf("key = k=ephemeral\nworkers = 0\n");
	refused("a number out of range in the file", PARSE("--config", conf), -EINVAL,
		"workers: '0' is not a number from 1 to 256");
	write_conf("workers = 4\n");
	refused("a file without keys", PARSE("--config", conf), -EINVAL,
		"no keys: give at least one --key");

	char missing[sizeof(dir) + 16];
	snprintf(missing, sizeof(missing), "%s/none.conf", dir);
	snprintf(want, sizeof(want), "modsignd: %s: No such file or directory\n", missing);
	refused("a missing config file", PARSE("--config", missing, "--key", "k=ephemeral"),
		-ENOENT, want);
	snprintf(want, sizeof(want), "modsignd: %s: Invalid argument\n", dir);
	refused("a directory as config file", PARSE("--config", dir, "--key", "k=ephemeral"),
		-EINVAL, want);
}

UNIT_TEST(check_config)
{
	write_conf("key = k=ephemeral\n");
	CHECK_EQ("--check-config --config parses", PARSE("--check-config", "--config", conf), 0);
	CHECK("check_config set, file read", o.check_config && o.n_keys == 1 &&
						     strcmp(o.config, conf) == 0);
	CHECK_EQ("--check-config twice parses (a flag)",
		 PARSE("--check-config", "--config", conf, "--check-config"), 0);
	write_conf("key = k=ephemeral\nnope = 1\n");
	refused("--check-config reports a bad file", PARSE("--check-config", "--config", conf),
		-ENOENT, "unknown setting 'nope'");
	/* Without --config it checks the default file, not nothing. */
	if (access(OPTIONS_DEFAULT_CONFIG, F_OK) < 0) {
		refused("--check-config reads " OPTIONS_DEFAULT_CONFIG,
			PARSE("--check-config", "--key", "k=ephemeral"), -ENOENT,
			"modsignd: " OPTIONS_DEFAULT_CONFIG ": No such file or directory\n");
	} else {
		PARSE("--check-config", "--key", "k=ephemeral");
		CHECK("--check-config reads " OPTIONS_DEFAULT_CONFIG,
		      o.config && strcmp(o.config, OPTIONS_DEFAULT_CONFIG) == 0);
	}
	/* Twin: without --check-config no file is read. */
	CHECK_EQ("no --config, no --check-config: no file", PARSE("--key", "k=ephemeral"), 0);
	CHECK("...and config stays NULL", !o.config);
}

static struct policy reloaded;

static int run_reload(void *p)
{
	(void)p;
	policy_clear(&reloaded);
	return options_reload_allow(&o, &reloaded);
}

UNIT_TEST(reload)
{
	struct peer u1000 = { .uid = 1000, .gid = 1 }, u1001 = { .uid = 1001, .gid = 1 },
		    u1002 = { .uid = 1002, .gid = 1 }, root = { .uid = 0 };

	write_conf("key = k=ephemeral\nallow = uid:1000\naudit-log = /a\n");
	CHECK_EQ("reload: start", PARSE("--config", conf, "--allow", "uid:1001"), 0);
	CHECK_EQ("reload of the same file", captured(run_reload, NULL), 0);
	CHECK("reload: the file's and the command line's rules",
	      policy_admits(&reloaded, &u1000) && policy_admits(&reloaded, &u1001) &&
		      !policy_admits(&reloaded, &u1002) && !policy_admits(&reloaded, &root));
	CHECK("reload of the same file warns of nothing", logged[0] == '\0');

	write_conf("key = k=ephemeral\nallow = uid:1002\naudit-log = /b\nworkers = 2\n");
	CHECK_EQ("reload of an edited file", captured(run_reload, NULL), 0);
	CHECK("reload: the new file's rule replaces the old",
	      !policy_admits(&reloaded, &u1000) && policy_admits(&reloaded, &u1002));
	CHECK("reload: the command line's rule stays", policy_admits(&reloaded, &u1001));
	char want[512];
	snprintf(want, sizeof(want),
		 "modsignd: SIGHUP: %s: changed audit-log, workers: not applied until "
		 "modsignd restarts (a reload applies the allow rules, re-reads the "
		 "tls-crl file and reopens the audit log)\n", conf);
	CHECK("reload names the settings it does not apply", strcmp(logged, want) == 0);
	if (strcmp(logged, want) != 0)
		printf("#   logged: %s", logged);
	CHECK("reload leaves the running options alone",
	      strcmp(o.audit_log, "/a") == 0 && o.n_allow == 2);

	write_conf("key = k=ephemeral\nallow = uid:x\n");
	refused("reload of a bad rule", captured(run_reload, NULL), -EINVAL,
		"modsignd: allow uid:x: expected IDENTITY[=KEY,...] with uid:N, gid:N, "
		"user:NAME, group:NAME or [PIN/...]cn:NAME (pins: sha256:HEX, "
		"issuer-sha256:HEX, serial:HEX with issuer-sha256:)\n");
	write_conf("key = k=ephemeral\nallow = user:modsign-no-such-user\n");
	refused("reload of an unknown user", captured(run_reload, NULL), -ENOENT,
		"modsignd: allow user:modsign-no-such-user: No such file or directory\n");
	write_conf("key = k=ephemeral\nallow = uid:1\nworkers = 1\nworkers = 2\n");
	refused("reload of a file with a setting twice", captured(run_reload, NULL), -EINVAL,
		"'workers' given twice (first on line 3)");

	/* No rule anywhere: the default, root (and our own uid). */
	write_conf("key = k=ephemeral\n");
	CHECK_EQ("reload: start without rules", PARSE("--config", conf), 0);
	CHECK_EQ("reload without rules", captured(run_reload, NULL), 0);
	CHECK("reload without rules: the default admits root",
	      policy_admits(&reloaded, &root) && !policy_admits(&reloaded, &u1000));
	policy_clear(&reloaded);
}

/* The fixture: a scratch directory for the configuration file and what
 * a parse writes to stderr. */
static bool fixture(void)
{
	if (!unit_mkdtemp(dir))
		return false;
	snprintf(conf, sizeof(conf), "%s/modsignd.conf", dir);
	return true;
}

static void fixture_free(void)
{
	unit_rm_rf(dir);
}

UNIT_MAIN(.setup = fixture, .teardown = fixture_free)
