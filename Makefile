# modsign — kernel module signing service.
#   make            build build/modsignd and build/modsign-client
#   make check      install test dependencies, build, run the whole suite
#   make demo       sign and verify a real module with a one-time key
#   make install    PREFIX=/usr/local DESTDIR=
#   make deb        the Debian packages, into build/deb/
#   make vm-check   install each release's in a guest of that release (12, 13)

VERSION  := 0.1
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
SBINDIR  ?= $(PREFIX)/sbin
DATADIR  ?= $(PREFIX)/share/modsign
MANDIR   ?= $(PREFIX)/share/man
# Units: for PREFIX=/usr where this release's systemd keeps packaged
# units (pkg-config: bookworm's /lib/systemd/system, trixie's
# /usr/lib/systemd/system); under any other PREFIX, which systemd also
# reads (/usr/local/lib/systemd/system).
UNITDIR  ?= $(or $(if $(filter /usr,$(PREFIX)),$(shell pkg-config \
                --variable=systemdsystemunitdir systemd 2>/dev/null)),$(PREFIX)/lib/systemd/system)
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR ?= /etc
# The PKCS#11 module: where p11-kit looks for modules named without a path
# (Debian's multiarch $(libdir)/pkcs11), and p11-kit's module files.
MULTIARCH ?= $(shell $(CC) -print-multiarch 2>/dev/null)
PKCS11DIR ?= $(PREFIX)/lib/$(if $(MULTIARCH),$(MULTIARCH)/)pkcs11
P11KITMODDIR ?= $(PREFIX)/share/p11-kit/modules
B        := build
SAN      ?=

CC       ?= gcc
PKGS     := libssl libcrypto json-c libsystemd libp11 p11-kit-1
WARN     := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
            -Wvla -Wformat=2 -Wwrite-strings -Wno-format-nonliteral -Werror
# -fPIC, not -fPIE: the client's objects are linked into the PKCS#11
# module (a shared object) as they are into the client.
HARDEN   := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIC
CFLAGS   ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(HARDEN) $(CFLAGS) -Ilib -MMD -MP \
              -DMODSIGN_VERSION='"$(VERSION)"' $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDFLAGS  ?=
ALL_LDFLAGS := -pie -Wl,-z,relro,-z,now $(LDFLAGS)
LIBS     := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcrypto -ljson-c)
# The client alone reads compressed modules (modsign-client/compress.c).
COMP_PKGS := liblzma libzstd zlib
COMP_LIBS := $(shell pkg-config --libs $(COMP_PKGS) 2>/dev/null || echo -llzma -lzstd -lz)
# The client links only what its per-module call uses; libssl (a tls:
# server), p11-kit (a pkcs11: key) and the COMP_PKGS (a compressed
# module) it loads on first use (lib/dlopen.h; docs/PERFORMANCE.md,
# "Lazy loading"). The unit tests and the PKCS#11 module link them all.
CLIENT_LIBS := $(shell pkg-config --libs libcrypto json-c 2>/dev/null || echo -lcrypto -ljson-c)

ifneq ($(SAN),)
B        := build/san
ALL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -U_FORTIFY_SOURCE
ALL_LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC    := $(wildcard lib/*.c)
DAEMON_SRC := $(wildcard modsignd/*.c)
CLIENT_SRC := $(wildcard modsign-client/*.c)
P11_SRC    := $(wildcard pkcs11-module/*.c)
UNIT_SRC   := $(wildcard tests/unit/test-*.c)

# One client, linked against the shared libraries (a leaner second build
# for kbuild's per-module path saved less than 10% of it once dynamically
# linked too: docs/PERFORMANCE.md, "One client or two").
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(B)/obj/%.o)

LIB_OBJ    := $(LIB_SRC:%.c=$(B)/obj/%.o)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/obj/%.o) $(B)/obj/genkey_template.o
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

all: $(B)/modsignd $(B)/modsign-client $(B)/modsign-pkcs11.so

# Made afresh: "ar r" into the old archive would keep the object of a
# lib/ file since deleted.
$(B)/libmodsign.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/modsignd: $(DAEMON_OBJ) $(B)/libmodsign.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS) -lpthread

$(B)/modsign-client: $(CLIENT_OBJ) $(B)/libmodsign.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CLIENT_LIBS)

# The PKCS#11 module (docs/PKCS11.md): the client's connection,
# config and requests, the very objects the client links, and the
# module's own; only C_GetFunctionList is exported, so no name of ours
# meets one of the program that loads it.
P11_OBJ := $(P11_SRC:%.c=$(B)/obj/%.o) $(addprefix $(B)/obj/modsign-client/,\
	   conn.o conn-tls.o rpc.o client.o)
$(B)/obj/pkcs11-module/%.o: ALL_CFLAGS += -Imodsign-client
$(B)/modsign-pkcs11.so: $(P11_OBJ) $(B)/libmodsign.a pkcs11-module/exports.map
	$(CC) -shared -Wl,-z,relro,-z,now,-z,defs -Wl,--version-script=pkcs11-module/exports.map \
		$(filter -fsanitize=%,$(ALL_LDFLAGS)) $(LDFLAGS) -o $@ $(P11_OBJ) $(B)/libmodsign.a $(LIBS) -lpthread

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The certificate template is compiled into the daemon so that a one-time
# key needs no file at all; --genkey-template overrides it.
$(B)/genkey_template.c: keygen/x509.genkey.in
	@mkdir -p $(dir $@)
	{ echo '/* generated from keygen/x509.genkey.in */'; \
	  echo 'extern const char certgen_builtin_template[];'; \
	  echo 'const char certgen_builtin_template[] ='; \
	  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $<; echo ';'; } > $@
$(B)/obj/genkey_template.o: $(B)/genkey_template.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# A unit test is its .c file, the daemon or client objects it tests (named
# below; linked whole, before the library they use) and the library; the
# tests' own shared code (tests/unit/unit-*.c) is named with them.
$(B)/tests/%: tests/unit/%.c $(B)/libmodsign.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Imodsignd -Imodsign-client -Ipkcs11-module $(ALL_LDFLAGS) -o $@ \
		$(filter-out %.a,$^) $(filter %.a,$^) $(LIBS) $(COMP_LIBS) -lpthread
$(B)/tests/test-policy: $(B)/obj/modsignd/policy.o
$(B)/tests/test-admission: $(B)/obj/modsignd/admission.o
$(B)/tests/test-options: $(B)/obj/modsignd/options.o $(B)/obj/modsignd/policy.o \
			 $(B)/obj/modsignd/log.o
$(B)/tests/test-modfile: $(B)/obj/modsign-client/modfile.o $(B)/obj/modsign-client/compress.o
$(B)/tests/test-compress: $(B)/obj/modsign-client/compress.o
$(B)/tests/test-paths: $(B)/obj/modsign-client/paths.o $(B)/obj/modsign-client/compress.o
$(B)/tests/test-p11-sign: $(B)/obj/pkcs11-module/p11-sign.o $(B)/obj/tests/unit/unit-cert.o
$(B)/tests/test-p11-object: $(B)/obj/pkcs11-module/p11-object.o $(B)/obj/tests/unit/unit-cert.o
$(B)/tests/test-util: $(B)/obj/tests/unit/unit-cert.o
$(B)/tests/test-mldsa: $(B)/obj/tests/unit/unit-cert.o
$(B)/tests/test-translog: $(B)/obj/modsignd/translog.o
$(B)/tests/test-conn: $(B)/obj/modsign-client/conn.o $(B)/obj/modsign-client/conn-tls.o
$(B)/tests/test-rpc: $(B)/obj/modsign-client/rpc.o $(B)/obj/modsign-client/conn.o \
		    $(B)/obj/modsign-client/conn-tls.o
# batch.o against fake servers: the client's objects whole, as it runs.
$(B)/tests/test-batch: $(filter-out $(B)/obj/modsign-client/main.o,$(CLIENT_OBJ))
# request.o's reply builders describe keys: the keystore comes whole.
$(B)/tests/test-request: $(filter-out $(B)/obj/modsignd/main.o,$(DAEMON_OBJ))

unit: $(UNIT_BIN)

deps:
	tests/install-deps.sh

check: deps
	$(MAKE) all unit
	tests/run.sh

check-quick: all unit
	MODSIGN_SKIP_QEMU=1 tests/run.sh

# The kernel side alone: each patched kernel of tests/qemu/kernels.sh
# booted in QEMU (all three are part of make check).
QEMU_KERNELS ?= 6.1 6.12 7.3
qemu-check: deps
	$(MAKE) all
	set -e; for v in $(QEMU_KERNELS); do tests/qemu/run.sh $$v; done

# The packages under a real systemd: a Debian 12 guest in QEMU installs
# make deb's .debs and checks them (tests/vm/; part of make check).
vm-check: deps
	tests/bats-lines tests/integration/vm.bats

demo: deps
	$(MAKE) all
	tests/demo.sh

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)
	install -m 0755 $(B)/modsignd $(DESTDIR)$(SBINDIR)/modsignd
	install -m 0755 $(B)/modsign-client $(DESTDIR)$(BINDIR)/modsign-client
	install -m 0644 keygen/x509.genkey.in $(DESTDIR)$(DATADIR)/x509.genkey.in
	install -m 0644 systemd/modsignd.conf.example $(DESTDIR)$(DATADIR)/modsignd.conf.example
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 man/modsign-client.1 $(DESTDIR)$(MANDIR)/man1/
	install -d $(DESTDIR)$(PKCS11DIR) $(DESTDIR)$(P11KITMODDIR)
	install -m 0644 $(B)/modsign-pkcs11.so $(DESTDIR)$(PKCS11DIR)/
	echo "module: $(PKCS11DIR)/modsign-pkcs11.so" >$(DESTDIR)$(P11KITMODDIR)/modsign.module
	chmod 0644 $(DESTDIR)$(P11KITMODDIR)/modsign.module
	install -m 0644 man/modsignd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 man/modsignd.8 $(DESTDIR)$(MANDIR)/man8/
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR)
	sed 's|/usr/sbin/modsignd|$(SBINDIR)/modsignd|' systemd/modsignd.service > $(DESTDIR)$(UNITDIR)/modsignd.service
	install -m 0644 systemd/modsignd.socket systemd/modsignd-tls.socket \
		systemd/modsignd-tls-handoff.service $(DESTDIR)$(UNITDIR)/
	install -m 0644 systemd/modsign.sysusers $(DESTDIR)$(SYSUSERSDIR)/modsign.conf
	# The configuration: installed once, never over the operator's.
	install -d $(DESTDIR)$(SYSCONFDIR)/modsignd $(DESTDIR)$(SYSCONFDIR)/modsign
	test -e $(DESTDIR)$(SYSCONFDIR)/modsignd/modsignd.conf || \
		install -m 0644 systemd/modsignd.conf.example $(DESTDIR)$(SYSCONFDIR)/modsignd/modsignd.conf
	test -e $(DESTDIR)$(SYSCONFDIR)/modsign/client.conf || \
		install -m 0644 systemd/client.conf.example $(DESTDIR)$(SYSCONFDIR)/modsign/client.conf
	# On a live system (no DESTDIR), the modsign group that modsignd.socket
	# names must exist before the socket starts: a package's postinst does
	# this (dh_installsysusers), here make does.
	if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
		systemd-sysusers $(SYSUSERSDIR)/modsign.conf; fi

# The Debian packages (debian/): modsignd and modsign-client, built with
# dpkg-buildpackage from a copy of this tree into build/deb/, then lintian.
# Only what building packages needs (not the test suite's groups); the
# Build-Depends that differ per release (systemd-dev on trixie) from
# debian/control itself, the way sbuild does.
DEB_B := $(B)/deb
deb:
	tests/install-deps.sh build deb
	dpkg-checkbuilddeps 2>/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq --no-install-recommends ./ >/dev/null; }
	rm -rf $(DEB_B) && mkdir -p $(DEB_B)/modsign-$(VERSION)
	tar -c --exclude=./build --exclude=./.git . | tar -x -C $(DEB_B)/modsign-$(VERSION)
	cd $(DEB_B)/modsign-$(VERSION) && dpkg-buildpackage -b -us -uc >../build.log 2>&1 || \
		{ tail -n 30 ../build.log; exit 1; }
	rm -rf $(DEB_B)/modsign-$(VERSION)
	lintian --fail-on error,warning $(DEB_B)/*.changes
	@ls $(DEB_B)/*.deb

format:
	clang-format -i lib/*.[ch] modsignd/*.[ch] modsign-client/*.[ch] tests/unit/*.c

clean:
	rm -rf build/obj build/san build/tests build/modsignd build/modsign-client \
	       build/modsign-client-full \
	       build/libmodsign.a build/genkey_template.c

.PHONY: all unit deps check check-quick qemu-check vm-check demo install deb format clean
-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# ---- fuzzing and sanitizers (tests/fuzz) ----
#   make fuzz        build the libFuzzer targets, run each for FUZZ_SECONDS
#   make fuzz-build  build them only: build/fuzz/fuzz-NAME
#   make sanitize    the ASan+UBSan suite alone (tests/integration/sanitizers.bats)
# make check runs both briefly (tests/integration/fuzz.bats, sanitizers.bats).
# The targets link the objects they fuzz (modsignd/request.o, certgen.o),
# built here with clang, libFuzzer and ASan+UBSan.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_B       := build/fuzz
FUZZ_NAMES   := proto-frame request modsig pkcs7-verify base64-hex certgen certfp tlog \
                $(if $(wildcard lib/conf.c),conf)
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=gnu11 $(WARN) -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
                -Ilib -Imodsignd -MMD -MP -DMODSIGN_VERSION='"$(VERSION)"' \
                $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_BIN     := $(FUZZ_NAMES:%=$(FUZZ_B)/fuzz-%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_B)/obj/%.o)

$(FUZZ_B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_B)/fuzz-%: $(FUZZ_B)/obj/tests/fuzz/fuzz-%.o $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS)
$(FUZZ_B)/fuzz-request: $(FUZZ_B)/obj/modsignd/request.o
$(FUZZ_B)/fuzz-certgen: $(FUZZ_B)/obj/modsignd/certgen.o

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_SEED=0 tests/fuzz/run-brief.sh

sanitize:
	tests/run.sh sanitizers

fuzz-clean:
	rm -rf $(FUZZ_B)
clean: fuzz-clean

.PHONY: fuzz fuzz-build fuzz-clean sanitize bench bench-farm
-include $(shell find $(FUZZ_B)/obj -name '*.d' 2>/dev/null)

# make bench: sign all of Debian's modules with sign-file and with modsign,
# write docs/PERFORMANCE.md (tests/bench/run.sh; not part of make check).
bench: all
	tests/bench/run.sh
	BENCH_OUT=docs/PERFORMANCE.md tests/bench/farm.sh

# make bench-farm: the farm part alone (tests/bench/farm.sh: network
# namespaces, one, two and three signing hosts, one killed halfway).
bench-farm: all
	BENCH_OUT=docs/PERFORMANCE.md tests/bench/farm.sh
