"""Group the non-agreeing rows of out/*.jsonl by construct, class and regent's error."""
import json, glob, os, sys, collections
HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "target/opa_outside")
filt = sys.argv[1] if len(sys.argv) > 1 else ""
for f in sorted(glob.glob(os.path.join(HERE, "out/*.jsonl"))):
    name = os.path.basename(f)[:-6]
    if filt and filt not in name:
        continue
    groups = collections.defaultdict(list)
    for l in open(f):
        r = json.loads(l)
        if r["class"] in ("agree", "parse-refused", "schema-refused"):
            continue
        key = (r["class"], (((r["regent"] or {}).get("log") or (r["regent"] or {}).get("error") or "")[:110]) if r["regent"] else "none")
        groups[key].append(r)
    for (cls, err), rows in groups.items():
        print(f"## {name} {cls} x{len(rows)} regent-err={err!r}")
        for r in rows[:int(os.environ.get("K", 3))]:
            print("   args", r["args"])
            print("   opa ", json.dumps(r["opa"], ensure_ascii=False)[:300])
            print("   reg ", json.dumps(r["regent"], ensure_ascii=False)[:300])
