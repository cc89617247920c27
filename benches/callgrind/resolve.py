#!/usr/bin/env python3
"""Instructions per tools/resolve, by callgrind.

Usage: resolve.py REGENT CATALOG TOOL ARGS_JSONL [N1 N2]

Runs `REGENT serve CATALOG` under `valgrind --tool=callgrind
--separate-threads=yes` twice, with N1 and N2 (default 1000 and 2000)
2025-11-25 `tools/resolve` requests of TOOL, cycling through the argument
objects of ARGS_JSONL (one JSON object per line), and prints the
instructions per resolve of all threads, (count(N2) - count(N1)) / (N2 -
N1), so start-up and the handshake cancel out, and the busiest thread's.
Instruction counts, not time: the sum over threads repeated within about
±4% in session 28 whatever else the machine did; the busiest thread's
moves by up to 2x between runs of one binary (see `run`), so compare sums
(BENCHMARKS.md).
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def requests(tool, args, n):
    out = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "callgrind", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for i in range(n):
        out.append({"jsonrpc": "2.0", "id": i + 1, "method": "tools/resolve",
                    "params": {"name": tool, "arguments": args[i % len(args)]}})
    return "".join(json.dumps(r) + "\n" for r in out)


def run(regent, catalog, text, n, workdir):
    out = os.path.join(workdir, f"cg.{n}")
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
           f"--callgrind-out-file={out}", regent, "serve", catalog, "--no-watch",
           "--policy-timeout-ms", "60000", "--decision-log", "/dev/null"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    p.stdin.write(text)
    p.stdin.flush()
    # Read every answer before closing stdin (closing first could end the
    # session before the last answers under valgrind's slowdown).
    seen = 0
    while seen < n + 1:
        line = p.stdout.readline()
        if not line:
            break
        if '"id"' in line:
            seen += 1
    p.stdin.close()
    p.wait()
    if seen < n + 1:
        sys.exit(f"only {seen} of {n + 1} answers")
    # Every thread's count, and the busiest thread's (the session's, when
    # evaluations stay in place). `serve` moves a tool's evaluations off
    # the session's thread while they run slow (`protocol/pace`), which
    # under callgrind's slowdown happens run to run at random, so only
    # the sum over threads repeats (BENCHMARKS.md, session 28).
    total, best = 0, 0
    for f in os.listdir(workdir):
        if f.startswith(f"cg.{n}"):
            with open(os.path.join(workdir, f)) as fh:
                m = re.search(r"^summary: (\d+)", fh.read(), re.M)
                if m:
                    total += int(m.group(1))
                    best = max(best, int(m.group(1)))
    return total, best


def main():
    regent, catalog, tool, args_file = sys.argv[1:5]
    n1, n2 = (int(sys.argv[5]), int(sys.argv[6])) if len(sys.argv) > 6 else (1000, 2000)
    with open(args_file) as fh:
        args = [json.loads(l) for l in fh if l.strip()]
    with tempfile.TemporaryDirectory() as d:
        (t1, b1) = run(regent, catalog, requests(tool, args, n1), n1, d)
        (t2, b2) = run(regent, catalog, requests(tool, args, n2), n2, d)
    print(f"{catalog} {tool}: {(t2 - t1) / (n2 - n1):.0f} instructions per resolve, all threads "
          f"({t1} at N={n1}, {t2} at N={n2}); busiest thread {(b2 - b1) / (n2 - n1):.0f}")


if __name__ == "__main__":
    main()
