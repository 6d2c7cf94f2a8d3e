#!/usr/bin/env bash
# Can slow or greedy clients starve the monitor? Starts `croq serve` with a token on an empty
# workspace and, phase by phase, measures GET /api/v1/health (a fresh connection every 100 ms,
# 5 s limit) while:
#   alone        nothing else happens;
#   slow         SLOW clients, each from its own loopback address (127.0.0.2, ...), trickle header
#                lines (one every second, never the empty line), reconnecting when dropped;
#   slow-1addr   the same from one address (the per-client cap at work);
#   streams      STREAMS clients, each from its own address, open the event stream and keep it;
#   both         slow and streams together.
# Goal: every health request answered, within 1 s. Prints a Markdown table and, with --record,
# writes it into docs/results/hardening.md between the monitor-starvation markers.
# Usage: bench/monitor_starvation.sh [--slow 200] [--streams 200] [--seconds 15] [--record]
#        CROQ_BIN=path/to/croq measures another build (e.g. an older one, for a before figure).
set -euo pipefail
cd "$(dirname "$0")/.."

slow=200 streams=200 seconds=15 record=0
while [ $# -gt 0 ]; do
  case "$1" in
    --slow) slow=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --record) record=1; shift ;;
    *) echo "bench/monitor_starvation.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
croq=${CROQ_BIN:-build/bin/croq}
[ -x "$croq" ] || { echo "bench/monitor_starvation.sh: $croq not found; build first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench/monitor_starvation.sh: needs python3" >&2; exit 2; }

work=$(mktemp -d /tmp/croq-starvation-XXXXXX)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ulimit -n 8192 2>/dev/null || true

token=$(openssl rand -hex 32)
printf '%s\n' "$token" >"$work/token"
chmod 600 "$work/token"
mkdir -p "$work/root/tuning"
"$croq" --root "$work/root" serve --bind 127.0.0.1:0 --token-file "$work/token" --no-scheduler \
  >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
for _ in $(seq 1 400); do
  grep -q '"port"' "$work/serve.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
  sleep 0.05
done
port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$work/serve.out" | head -1)
echo "bench: croq serve on port $port ($("$croq" --version 2>/dev/null | head -1))" >&2

table=$(python3 - "$port" "$token" "$slow" "$streams" "$seconds" <<'PY'
import socket, sys, threading, time, statistics

port, token = int(sys.argv[1]), sys.argv[2]
n_slow, n_streams, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])

def connect(src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if src != "127.0.0.1":
        s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s

def addr(i):
    i += 2
    return "127.%d.%d.%d" % (i // 65536 % 256, i // 256 % 256, i % 256)

class Slow(threading.Thread):
    """Clients that never finish their headers: a header line every second, reconnecting."""
    def __init__(self, n, one_address):
        super().__init__(daemon=True)
        self.n, self.one, self.stop, self.socks = n, one_address, False, {}
    def open(self, i):
        try:
            s = connect("127.0.0.1" if self.one else addr(i))
            s.setblocking(False)
            s.send(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            self.socks[i] = s
        except OSError:
            self.socks.pop(i, None)
    def run(self):
        for i in range(self.n):
            self.open(i)
        k = 0
        while not self.stop:
            for i in range(self.n):
                s = self.socks.get(i)
                try:
                    if s is None:
                        raise OSError
                    s.send(b"X-Trickle-%d: %d\r\n" % (k, k))
                except OSError:
                    if s is not None:
                        s.close()
                    self.open(i)
            k += 1
            time.sleep(1.0)
        for s in self.socks.values():
            s.close()

class Streams(threading.Thread):
    """Clients that open the event stream and keep it open (reading what comes)."""
    def __init__(self, n):
        super().__init__(daemon=True)
        self.n, self.stop, self.socks, self.opened, self.refused = n, False, [], 0, 0
    def run(self):
        import select
        req = ("GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n" % token).encode()
        for i in range(self.n):
            try:
                s = connect(addr(10000 + i))
                s.send(req)
                self.socks.append(s)
            except OSError:
                pass
        seen = set()
        while not self.stop and self.socks:
            r, _, _ = select.select(self.socks, [], [], 0.2)
            for s in r:
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if s not in seen and data:
                    seen.add(s)
                    if b" 200 " in data[:20]:
                        self.opened += 1
                    elif b" 503 " in data[:20]:
                        self.refused += 1
                if not data:
                    self.socks.remove(s)
                    s.close()
        for s in self.socks:
            s.close()

def probe():
    t0 = time.monotonic()
    try:
        s = connect("127.0.0.1")
        s.sendall(("GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                   "Connection: close\r\n\r\n" % token).encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        if not data.startswith(b"HTTP/1.1 200"):
            return None
        return (time.monotonic() - t0) * 1000
    except OSError:
        return None

def phase(name, attackers):
    for a in attackers:
        a.start()
    time.sleep(2.0)  # let the attack build up
    ms, failed = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = probe()
        if v is None:
            failed += 1
        else:
            ms.append(v)
        time.sleep(0.1)
    note = ""
    for a in attackers:
        if isinstance(a, Streams):
            note = "%d streams opened, %d refused (503)" % (a.opened, a.refused)
        a.stop = True
    for a in attackers:
        a.join(timeout=10)
    time.sleep(1.0)
    ms.sort()
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else float("nan")
    row = "| %s | %d | %d | %s | %s | %s | %s |" % (
        name, len(ms) + failed, failed,
        "%.1f" % statistics.median(ms) if ms else "-", "%.1f" % p99 if ms else "-",
        "%.1f" % ms[-1] if ms else "-", note)
    print(row, file=sys.stderr)
    return row

rows = [
    phase("alone", []),
    phase("slow: %d clients, own addresses" % n_slow, [Slow(n_slow, False)]),
    phase("slow: %d clients, one address" % n_slow, [Slow(n_slow, True)]),
    phase("streams: %d clients" % n_streams, [Streams(n_streams)]),
    phase("slow %d + streams %d" % (n_slow, n_streams), [Slow(n_slow, False), Streams(n_streams)]),
]
print("| phase | health requests | failed | median ms | p99 ms | max ms | |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print(r)
PY
)
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=""

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
block="Measured $(date -u +%Y-%m-%d) on $(nproc) cores, commit $commit, \`bench/monitor_starvation.sh --slow $slow --streams $streams --seconds $seconds\`
(health probed every 100 ms on a fresh connection, token configured, ${seconds} s per phase):

$table"
echo "$block"
if [ "$record" = 1 ]; then
  f=docs/results/hardening.md
  python3 - "$f" "$block" <<'PY'
import sys
path, block = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = "<!-- monitor-starvation:begin -->", "<!-- monitor-starvation:end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:a] + "\n" + block + "\n" + text[b:])
PY
  echo "bench: written into $f" >&2
fi
