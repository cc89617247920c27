"""Counts per class per construct, and whether `regent check` reported a located diagnostic (besides the proof's coverage note)."""
import json, os, re
HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "target/opa_outside")
s = json.load(open(os.path.join(HERE, "out/summary.json")))
cls = ["agree", "DIFFERENT", "FAIL-OPEN", "FAIL-CLOSED", "parse-refused", "schema-refused", "REGENT-NO-ANSWER"]
tot = {c: 0 for c in cls}
print("| construct | " + " | ".join(cls) + " | check (located, non-proof) |")
print("|---" * (len(cls) + 2) + "|")
for name, v in s.items():
    diags = [l for l in v["check"].splitlines() if re.match(r"^\S+:\d+:\d+: (warning|error): ", l) and "proof does not cover" not in l]
    kinds = sorted({re.sub(r"^\S+:(\d+):(\d+): (\w+): (.{0,60}).*", r"\3 L\1: \4", l) for l in diags})
    row = [v["counts"].get(c, 0) for c in cls]
    for c, n in zip(cls, row):
        tot[c] += n
    print(f"| {name} | " + " | ".join(str(x) for x in row) + " | " + ("; ".join(kinds)[:160] or "-") + " |")
print("| TOTAL | " + " | ".join(str(tot[c]) for c in cls) + " | |")
