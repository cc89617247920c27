#!/usr/bin/env python3
"""Instructions per stateless 2026-07-28 tools/resolve POST over HTTP, by callgrind.

Usage: http.py [--warm N] [--requests N] -- COMMAND...

COMMAND serves MCP over HTTP on 127.0.0.1 and prints nothing we need, or,
for the floor, prints its port on its first line of standard output:

    http.py -- target/release/regent serve --http 127.0.0.1:PORT examples/manage_files --decision-log /dev/null
    http.py -- target/release/regent-load --serve-floor

(`PORT` in the command is replaced by a free port.) The command runs under
`valgrind --tool=callgrind`; one keep-alive connection sends N warm-up
resolves of `manage_files` (default 200), the counters are zeroed
(`callgrind_control -z`), N more are sent (default 2000), one at a time,
and the counts are dumped (`callgrind_control -d`). Prints the instructions
per request, in total and by where the code is defined (the crate of each
function's own instructions: hyper, axum, rmcp, serde_json, regent's
modules, the allocator...), and the inclusive count of a few functions.
Instruction counts, not time: they hardly move whatever else the machine
does (BENCHMARKS.md). Traffic stays on 127.0.0.1.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

META = ('"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        '"io.modelcontextprotocol/clientInfo":{"name":"callgrind","version":"0"},'
        '"io.modelcontextprotocol/clientCapabilities":{}}')
ACTIONS = ["read", "append", "replace", "delete"]

# Where a function's own instructions are counted: the first rule whose
# pattern its name matches (demangled, no file names in a release build).
GROUPS = [
    ("allocator (mimalloc, libc malloc)", r"^(mi_|_mi_|__mi_|malloc|free|realloc|calloc|cfree|_int_malloc|_int_free|__libc_|__rustc::__rust_|__rust_(alloc|dealloc|realloc))|mimalloc"),
    ("memcpy/memmove/memset", r"^(__memcpy|__memmove|__memset|memcpy|memmove|memset|__mem)"),
    ("regent http (guards, hoist, direct door)", r"regent::http::"),
    ("regent protocol (handler, answer, direct)", r"regent::protocol::"),
    ("regent catalog (policy evaluation)", r"regent::(catalog|caller)"),
    ("regent decision log, metrics", r"regent::(decisions|metrics|timestamp)"),
    ("regent (other)", r"^<?regent::"),
    ("regorus", r"regorus"),
    ("rmcp", r"rmcp::"),
    ("serde_json", r"serde_json::|serde::"),
    ("hyper", r"hyper::|hyper_util::|httparse::|h2::"),
    ("axum, tower, http types", r"axum::|tower::|tower_http::|tower_layer|http::|http_body"),
    ("tokio", r"tokio::|mio::"),
    ("tracing", r"tracing::|tracing_core::|tracing_subscriber::"),
    ("futures, bytes, uuid", r"futures|bytes::|uuid::"),
    ("sha2 (digests)", r"sha2::"),
    ("hashbrown, indexmap", r"hashbrown::|indexmap::"),
    ("std, core, alloc", r"(^|<|as )(std|core|alloc)::"),
]

INCLUSIVE = [
    "rmcp::transport::streamable_http_server::tower::StreamableHttpService<S,M>::handle_post",
    "rmcp::transport::common::server_side_http::expect_json",
    "rmcp::transport::streamable_http_server::tower::validate_standard_headers",
    "rmcp::service::serve_inner",
    "regent::protocol::Regent::custom",
    "regent::http::hoist::rewrite",
    "regent::http::hoist::hoisted",
    "regent::http::shortcut::take",
    "regent::protocol::direct::HttpDirect::answer",
    "regent::protocol::line::custom_request",
    "regent::protocol::line::encode",
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def body(i):
    return ('{"jsonrpc":"2.0","id":%d,"method":"tools/resolve","params":{"name":"manage_files",'
            '"arguments":{"path":"notes/%d/file%d.txt","action":"%s","content":"hello"},%s}}'
            % (i, i, i, ACTIONS[i % 4], META)).encode()


class Client:
    def __init__(self, port):
        self.port = port
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def resolve(self, i):
        b = body(i)
        head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n"
                "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/resolve\r\n"
                "Mcp-Name: manage_files\r\n\r\n" % (self.port, len(b)))
        self.s.sendall(head.encode() + b)
        status = self.f.readline()
        length, chunked = None, False
        while True:
            line = self.f.readline()
            if line in (b"\r\n", b""):
                break
            k, v = line.decode().split(":", 1)
            k = k.strip().lower()
            if k == "content-length":
                length = int(v)
            elif k == "transfer-encoding" and "chunked" in v:
                chunked = True
        if length is not None:
            data = self.f.read(length)
        elif chunked:
            data = b""
            while True:
                n = int(self.f.readline().strip(), 16)
                if n == 0:
                    self.f.readline()
                    break
                data += self.f.read(n)
                self.f.readline()
        else:
            raise SystemExit("a response without a length: %r" % status)
        if not status.startswith(b"HTTP/1.1 200") or b'"result"' not in data:
            raise SystemExit("unexpected answer: %r %r" % (status, data[:300]))


def group_of(name):
    for label, pattern in GROUPS:
        if re.search(pattern, name):
            return label
    return "other"


def parse(path):
    """Self and inclusive instructions per function of a callgrind file.

    Read directly (callgrind_annotate 3.19 gave every dump's whole cost to
    the threads' entry points here): a cost line under `fn=` is the
    function's own, the cost line after `calls=` is a call's inclusive cost,
    added to the caller's inclusive count only.
    """
    names = {}
    own, inclusive = {}, {}
    current = None
    after_call = False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                m = re.match(r"fn=\((\d+)\)(?: (.*))?$", line)
                if m:
                    if m.group(2) is not None:
                        names[m.group(1)] = m.group(2)
                    current = names[m.group(1)]
                else:
                    current = line[3:]
                continue
            if line.startswith("cfn="):
                m = re.match(r"cfn=\((\d+)\)(?: (.*))?$", line)
                if m and m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                continue
            if line.startswith("calls="):
                after_call = True
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            fields = line.split()
            if len(fields) < 2 or current is None:
                continue
            cost = int(fields[-1])
            if after_call:
                inclusive[current] = inclusive.get(current, 0) + cost
                after_call = False
            else:
                own[current] = own.get(current, 0) + cost
                inclusive[current] = inclusive.get(current, 0) + cost
    return own, inclusive


def main():
    args = sys.argv[1:]
    warm, n = 200, 2000
    while args and args[0] != "--":
        if args[0] == "--warm":
            warm = int(args[1]); args = args[2:]
        elif args[0] == "--requests":
            n = int(args[1]); args = args[2:]
        else:
            raise SystemExit(__doc__)
    command = args[1:]
    if not command:
        raise SystemExit(__doc__)
    port = free_port()
    command = [a.replace("PORT", str(port)) for a in command]
    out_dir = tempfile.mkdtemp(prefix="cg-http-")
    out = os.path.join(out_dir, "cg.out")
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + command,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(out_dir, "stderr"), "w"))
    try:
        if "--serve-floor" in command:
            port = int(proc.stdout.readline())
        deadline = time.time() + 300
        while True:
            try:
                c = Client(port)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise SystemExit("the server did not listen; see " + out_dir)
                time.sleep(0.2)
        for i in range(warm):
            c.resolve(i + 1)
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
        for i in range(n):
            c.resolve(warm + i + 1)
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
    finally:
        proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=120)
    dumps = sorted(p for p in os.listdir(out_dir) if p.startswith("cg.out.") or p == "cg.out")
    # The dump asked for is the first numbered one (`cg.out.1`); the last
    # is written at exit.
    dump = os.path.join(out_dir, [d for d in dumps if d != "cg.out"][0])
    own, inc = parse(dump)
    total = sum(own.values())
    print("%s: %d requests, %.1fk instructions per request" % (" ".join(command[:2]), n, total / n / 1000))
    groups = {}
    for name, count in own.items():
        g = group_of(name)
        groups[g] = groups.get(g, 0) + count
    for g, c in sorted(groups.items(), key=lambda x: -x[1]):
        print("  %-45s %8.1fk  %5.1f%%" % (g, c / n / 1000, 100 * c / total))
    print("  inclusive:")
    for want in INCLUSIVE:
        best = max((c for name, c in inc.items() if name.startswith(want) or ("::" + want) in name or name.startswith("<" + want)), default=0)
        if best:
            print("    %-90s %8.1fk" % (want, best / n / 1000))
    print("  (callgrind output: %s)" % out_dir)


if __name__ == "__main__":
    main()
