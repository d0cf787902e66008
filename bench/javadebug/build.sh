#!/usr/bin/env bash
# Builds Microsoft's java-debug (the Debug Adapter Protocol server inside VS
# Code's "Debugger for Java"; 0.53.1 is the version measured) as a
# measurement peer for `jdwpaccel bench --java-debug DIR`, with javac alone:
# its core adapter (com.microsoft.java.debug.core) against Debian's Eclipse
# JDT JDI, Gson, Commons Lang 3 and Commons IO, our stand-in for the few
# RxJava 2 classes it uses (rxstub/), and our headless launcher
# (launcher/JavaDebugHeadless.java). Its Eclipse plugin is not built: a
# headless attach needs none of it.
#
# Nothing of java-debug is kept in this repository: give the script a
# checkout of it made elsewhere.
#
# Usage: bench/javadebug/build.sh SRC [OUT]
#   SRC  a java-debug source tree (its com.microsoft.java.debug.core/ inside),
#        or set JAVADEBUG_SRC
#   OUT  where the build goes (default SRC/jdwpaccel-peer); pass OUT to
#        `jdwpaccel bench --java-debug OUT`
# Needs: javac 17+, and
#   apt-get install libeclipse-jdt-debug-java libgoogle-gson-java \
#                   libcommons-lang3-java libcommons-io-java
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="${1:-${JAVADEBUG_SRC:-}}"
if [ -z "$src" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
src="$(cd "$src" && pwd)"
out="${2:-$src/jdwpaccel-peer}"
core="$src/com.microsoft.java.debug.core"
[ -d "$core/src/main/java" ] || { echo "build.sh: $src has no com.microsoft.java.debug.core/src/main/java: not a java-debug checkout" >&2; exit 1; }
version="$(sed -n 's:^ *<version>\([^<]*\)</version>.*:\1:p' "$core/pom.xml" | head -1)"

# Debian's jars: the compile classpath, then what Eclipse JDI loads at run
# time (its messages use OSGi's NLS).
deps=(
  /usr/share/java/eclipse-jdt-debug.jar
  /usr/share/java/gson.jar
  /usr/share/java/commons-lang3.jar
  /usr/share/java/commons-io.jar
)
runtime=(/usr/share/java/eclipse-osgi.jar)
for j in "${deps[@]}" "${runtime[@]}"; do
  [ -f "$j" ] || { echo "build.sh: $j missing: apt-get install libeclipse-jdt-debug-java libgoogle-gson-java libcommons-lang3-java libcommons-io-java" >&2; exit 1; }
done
cp_deps="$(IFS=:; echo "${deps[*]}")"

tmp="$(mktemp -d "${out%/}.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "build.sh: java-debug $version from $src"
javac -nowarn -encoding UTF-8 --release 17 -d "$tmp/rxstub" $(find "$here/rxstub" -name '*.java')
javac -nowarn -encoding UTF-8 --release 17 -cp "$tmp/rxstub:$cp_deps" -d "$tmp/core" $(find "$core/src/main/java" -name '*.java') 2>&1 | grep -v '^Note: ' || true
[ -f "$tmp/core/com/microsoft/java/debug/core/adapter/ProtocolServer.class" ] || { echo "build.sh: java-debug's core did not compile" >&2; exit 1; }
javac -nowarn -encoding UTF-8 --release 17 -cp "$tmp/core:$tmp/rxstub:$cp_deps" -d "$tmp/launcher" "$here/launcher/JavaDebugHeadless.java" 2>&1 | grep -v '^Note: ' || true
[ -f "$tmp/launcher/JavaDebugHeadless.class" ] || { echo "build.sh: the launcher did not compile" >&2; exit 1; }

# The peer's description, read by the bench (bench/javadebug.go).
{
  echo "version=$version"
  echo "main=JavaDebugHeadless"
  echo "classpath=$out/launcher:$out/core:$out/rxstub:$cp_deps:$(IFS=:; echo "${runtime[*]}")"
} > "$tmp/peer.properties"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "build.sh: built into $out (jdwpaccel bench --java-debug $out)"
