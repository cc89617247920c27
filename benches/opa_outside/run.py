"""Black-box differential: regent serve (stdio MCP, tools/resolve) vs OPA's Go engine.

usage: python3 run.py [N_PER_CONSTRUCT] [construct-name-filter]
Environment: REGENT (the binary; default target/debug/regent), OPA_PYTHON (an
interpreter with opa-golib-python-bindings; default /tmp/opavenv/bin/python).
Writes target/opa_outside/out/<construct>.jsonl (every input, both answers,
class) and target/opa_outside/out/summary.json; catalogs under
target/opa_outside/catalogs.
"""
import json, os, random, select, subprocess, sys, time
from decimal import Decimal, getcontext

getcontext().prec = 2000
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REGENT = os.environ.get("REGENT", os.path.join(ROOT, "target/debug/regent"))
OPA_PY = os.environ.get("OPA_PYTHON", "/tmp/opavenv/bin/python")
WORK = os.path.join(ROOT, "target/opa_outside")
sys.path.insert(0, HERE)
import corpus

J = json.dumps
S = lambda s: json.dumps(s, ensure_ascii=False)
NUM = ["0", "1", "-1", "2", "3", "5", "7", "10", "11", "100", "-5", "0.5", "-2.5", "0.1", "0.2",
       "0.3333333333333333", "1e300", "-1e300", "9223372036854775807", "9223372036854775808",
       "18446744073709551617", "1e-7", "2.50", "1E2", "-0", "1.0", "4.999999999999999999",
       "123456789012345678901234567890", "3.0e0", "0.1e1", "1e400", "-7.5", "1e-320"]
INT = ["-5", "-3", "-2", "-1", "0", "1", "2", "3", "4", "5", "6", "10", "100", "1.5", "9223372036854775808", "2.0"]
STR = [S(x) for x in ["", "a", "abc", "ABC", "Admin", "ADMIN", "admın", "İstanbul", "ß", "straße", "ǅ", "ﬁ",
       "😀", "👍🏽", "👨‍👩‍👧", "e\u0301", "é", "\u202eabc", "a\u0000b", "hello world", "  x  ", "\u00a0x\u3000",
       "\t\n", "a.b.c", "foo.txt", "x,y,,z", "a/b/c", "/etc/passwd", "ok", "adm", "Σσς", "ΣΑΣ", "ǰ", "ŉ", "İ",
       "ı", "\u212a", "ﬀ", "ꭰ", "ᾳ", "rm", "%", "%d", "aaa", "日本語", "𝔘", "a\u0300\u0301b", "ǈ", "ʼn", "ẞ",
       "\u0130i", "K", "x", ".", "*", "ab", "ba", "\u00df\u00df"]]
NUMSTR = [S(x) for x in ["10", "-5", "0x1F", "1e3", " 12 ", "+3", "NaN", "Inf", "inf", "1_000", "0b101", "0o17",
          "1.5", "", "007", ".5", "5.", "1e400", "-0", "١٢", "12abc", "9223372036854775808", "0.1", "1E2",
          "Infinity", "-Inf", "+Inf", "0x", "1e-400", "99", "100", "100.0", "18446744073709551617", "0.30000000000000004"]]
PAT = [S(x) for x in ["^a", "(?i)abc", "\\d+", "[", "\\p{Greek}", "\\pL+", "a{2,}", "^.$", "\\w+", "\\bx", "",
       "(a|b)*", "^\\S+$", "[[:alpha:]]+", "(?P<n>a)", "a++", "\\X", "(?=a)", "\\Q.\\E", ".", "\\p{Lu}", "(?s).",
       "^..$", "\\pN", "[^a]", "(?U)a+", "\\C", "a{1001}", "\\z", "$"]]
GLOB = [S(x) for x in ["*.txt", "a.*", "**", "[a-c]*", "{a,b}*", "?", "*", "a/*", "[!a]*", "\\*", "", "**.txt", "[",
        "*.{txt,md}", "?.?", "a.b.c", "**/*", "*c"]]
ARR = ["[]", "[1,2,3]", '["a","b"]', "[null]", "[[1]]", '[1,"a",true,null]', '["a","a"]', '[{"k":1},{"k":1}]',
       "[1,1.0]", "[0.1,0.2]", "[3,1,2]", '["rm","ls"]', "[1e300,1e300]", '["😀","ß"]', "[{}]", "[[],{}]",
       "[true,false]", "[-1]", '["x",["y"]]', '["a",1]', "[18446744073709551617,1]", '["k","a"]', '[""]', "[2.5,-0.5]"]
OBJ = ["{}", '{"k":1}', '{"a":{"b":2}}', '{"x":"y","z":[1]}', '{"a":true,"b":false}', '{"k":null}', '{"0":"zero"}',
       '{"a":{"b":{"c":3}}}', '{"k":{"k":1}}', '{"ß":1}', '{"x":[{"y":1}]}', '{"z":[5]}']
PATH = ['"k"', '"a"', '["a","b"]', "[]", '["x",0]', "[0]", '["a","b","c"]', '["z",0]', '"0"', '["k","k"]', "null",
        "0", '"a.b"', '["x",0,"y"]']
JSONSTR = [S(x) for x in ["1", "[1,2]", '{"a":1}', "", "nul", "1e400", '"x"', "true", '{"a":1,"a":2}', "  2  ",
           "0.1", "18446744073709551617", "[1,]", "NaN", "1.0", '"\\ud800"', "-0"]]
B64 = [S(x) for x in ["aGVsbG8=", "aGVsbG8", "", "!!", "aGVsbG8=\n", "YQ==", "YQ", "-_-_", "/+/+", "aGVsbG8gd29ybGQ=",
       "w4k=", "/w==", "YQ=", "Y"]]
TIME = [S(x) for x in ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05+01:00", "2024-01-02", "2024-02-30T00:00:00Z",
        "1677-09-21T00:12:43Z", "2262-04-11T23:47:17Z", "9999-12-31T23:59:59Z", "2024-01-02T03:04:05.123456789Z",
        "2024-01-02T03:04:05.1234567891Z", "2024-01-02t03:04:05z", "0000-01-01T00:00:00Z", "", "2024-01-02T24:00:00Z",
        "2016-12-31T23:59:60Z", "2024-01-02 03:04:05Z", "2024-01-02T03:04:05-00:00"]]
UNITS = [S(x) for x in ["10KB", "1Ki", "1K", "1k", "1.5G", "0", "-1", "1e3", "10 KB", "1KiB", "1MB", "1m", "1mi", "",
         "abc", "18446744073709551617", "1.5", "1Ei", "100Ei", "0.5m", "1.5Ki", "  1K", "1kb", "1 k", "1M", "1u", "0.001"]]
CIDR = [S(x) for x in ["10.0.0.0/8", "10.0.0.1", "10.0.0.1/32", "::1", "::/0", "192.168.0.0/16", "192.168.1.1",
        "0.0.0.0/0", "10.0.0.0/33", "abc", "", "2001:db8::/32", "2001:db8::1", "::ffff:10.0.0.1", "10.0.0.1/8",
        "010.0.0.1", "10.0.0.0/08"]]
SEMVER = [S(x) for x in ["1.2.3", "1.10.0", "1.2.3-alpha", "1.2.3-alpha.1", "1.2.3+build", "v1.2.3", "1.2", "01.2.3",
          "1.2.3-01", "1.2.3-alpha.beta", "", "1.2.3-0", "10.0.0", "1.2.3-alpha.10", "1.2.3-alpha.9", "1.2.3-Alpha"]]
SCAL = ["null", "true", "false"]
ANY = SCAL + NUM + STR + ARR + OBJ + ['{"a":[1,{"b":null}]}', '[[["deep"]]]']
POOLS = {"num": NUM, "int": INT, "str": STR, "numstr": NUMSTR, "pat": PAT, "glob": GLOB, "arr": ARR, "obj": OBJ,
         "path": PATH, "jsonstr": JSONSTR, "b64": B64, "time": TIME, "units": UNITS, "cidr": CIDR, "semver": SEMVER,
         "coll": STR + ARR + OBJ}
ABSENT = object()


def gen_args(rng, kinds):
    out = []
    for k in ("a", "b", "c"):
        r = rng.random()
        if k in kinds:
            v = rng.choice(POOLS[kinds[k]]) if r < 0.72 else (rng.choice(ANY) if r < 0.92 else ABSENT)
        else:
            p_abs = 0.15 if k == "a" else 0.6
            v = ABSENT if r < p_abs else rng.choice(ANY)
        if v is not ABSENT:
            out.append(f'"{k}":{v}')
    if rng.random() < 0.03:
        out.append('"z":1')
    return "{" + ",".join(out) + "}"


def canon(v):
    """A comparable form: numbers by exact value, types kept apart."""
    if isinstance(v, dict) and set(v) == {"$opa_number"}:
        v = Decimal(v["$opa_number"])
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, Decimal):
        return ("#", "0" if v == 0 else str(v.normalize()))
    if isinstance(v, (int, float)):
        return canon(Decimal(str(v)))
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ["L"] + [canon(x) for x in v]
    if isinstance(v, dict):
        return {"O": sorted((k, canon(x)) for k, x in v.items())} if False else {k: canon(x) for k, x in v.items()}
    raise TypeError(v)


DEFAULT_HINTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}


def expected_from_opa(res):
    """What regent's resolve answer must be, given OPA's values of meta, deny, confirm, annotations."""
    names = ["meta", "deny", "confirm", "annotations"]
    r = dict(zip(names, res))
    for n in names:
        if "error" in r[n]:
            return {"error": f"opa {n}: {r[n]['error']}"}
    ann = dict(DEFAULT_HINTS)
    if "value" in r["annotations"]:
        a = r["annotations"]["value"]
        if not isinstance(a, dict) or any(not isinstance(v, bool) for k, v in a.items() if k in DEFAULT_HINTS):
            return {"error": "opa annotations ill-typed"}
        ann.update({k: v for k, v in a.items() if k in DEFAULT_HINTS})
    meta = {}
    if "value" in r["meta"]:
        m = r["meta"]["value"]
        if not isinstance(m, dict):
            return {"error": "opa meta ill-typed"}
        meta = canon(m)
    reasons = []
    if "value" in r["deny"]:
        d = r["deny"]["value"]
        if not isinstance(d, list) or any(not isinstance(x, str) for x in d):
            return {"error": "opa deny ill-typed"}
        reasons = sorted(d)
    conf = None
    if "value" in r["confirm"]:
        conf = r["confirm"]["value"]
        if not isinstance(conf, str):
            return {"error": "opa confirm ill-typed"}
    return {"annotations": ann, "meta": meta, "reasons": reasons, "confirm": conf}


def from_regent(resp):
    if "error" in resp:
        e = resp["error"]
        return {"error": f"regent {e.get('code')}: {e.get('message')} {J((e.get('data') or {}).get('reason'))}",
                "code": e.get("code")}
    res = resp["result"]
    meta = {k: v for k, v in (res.get("_meta") or {}).items() if k != "regent/decision"}
    dec = res["_meta"]["regent/decision"]
    return {"annotations": {k: res["annotations"][k] for k in DEFAULT_HINTS}, "meta": canon(meta),
            "reasons": sorted(dec.get("reasons", [])), "confirm": dec.get("confirm")}


class Regent:
    def last_error(self):
        """The error of the newest decision-log line regent wrote on stderr (sequential requests)."""
        time.sleep(0.01)
        with open(self.errpath, encoding="utf-8", errors="replace") as f:
            f.seek(self.errpos)
            text = f.read()
            self.errpos = f.tell()
        msg = None
        for line in text.splitlines():
            if line.startswith("{") and '"decision":"error"' in line:
                try:
                    msg = json.loads(line).get("error")
                except ValueError:
                    pass
        return msg

    def __init__(self, catalog, errpath):
        self.errpath, self.errpos = errpath, 0
        self.err = open(errpath, "w")
        self.p = subprocess.Popen([REGENT, "serve", catalog], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, bufsize=0)
        self.buf = b""
        self.id = 0
        init = self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "hunt", "version": "1"}})
        if init is None or "error" in init:
            raise RuntimeError(f"initialize failed: {init}")
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line):
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()

    def readline(self, timeout=30):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    return None
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line, parse_float=Decimal, parse_int=Decimal)

    def call(self, method, params_text):
        self.id += 1
        pt = params_text if isinstance(params_text, str) else J(params_text)
        self.send(f'{{"jsonrpc":"2.0","id":{self.id},"method":"{method}","params":{pt}}}')
        while True:
            m = self.readline()
            if m is None:
                return None
            if m.get("id") == self.id or (m.get("id") is None and "error" in m):
                return m

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()
        self.err.close()


class Opa:
    def __init__(self):
        self.p = subprocess.Popen([OPA_PY, os.path.join(ROOT, "tests/opa/oracle.py")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def req(self, obj_text):
        self.p.stdin.write(obj_text + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())


def classify(exp, got):
    if got is None:
        return "REGENT-NO-ANSWER"
    ee, ge = "error" in exp, "error" in got
    if ee and ge:
        return "agree"
    if ge:
        if got.get("code") == -32602:
            return "schema-refused"
        if got.get("code") == -32700:
            return "parse-refused"
        return "FAIL-CLOSED"
    if ee:
        return "FAIL-OPEN"
    return "agree" if exp == got else "DIFFERENT"


def crosscheck():
    pass


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 350
    filt = sys.argv[2] if len(sys.argv) > 2 else ""
    outdir = os.path.join(WORK, "out")
    catroot = os.path.join(WORK, "catalogs")
    os.makedirs(outdir, exist_ok=True)
    opa = Opa()
    summary = {}
    for name, body, kinds, schema in corpus.C:
        if filt and filt not in name:
            continue
        cat = os.path.join(catroot, name)
        os.makedirs(cat, exist_ok=True)
        rego = f"package tools.t\n\nimport rego.v1\n\n{body}"
        with open(os.path.join(cat, "t.rego"), "w") as f:
            f.write(rego)
        sch = schema or {"type": "object"}
        with open(os.path.join(cat, "t.yaml"), "w") as f:
            f.write("tools:\n  - name: t\n    description: hunt construct\n"
                    f"    inputSchema: {J(sch)}\n    policy: tools.t\n")
        chk = subprocess.run([REGENT, "check", cat], capture_output=True, text=True, timeout=300)
        check_out = (chk.stdout + chk.stderr).strip()
        lo = opa.req(J({"load": {"modules": [["t.rego", rego]], "data": {}}}))
        counts = {}
        rows = []
        try:
            rg = Regent(cat, os.path.join(outdir, name + ".stderr"))
            load_err = None
        except Exception as e:
            rg, load_err = None, str(e)
        rng = random.Random(f"hunt-{name}")
        for i in range(n):
            args = gen_args(rng, kinds)
            inp = f'{{"tool":"t","arguments":{args}}}'
            o = opa.req(J({"eval": ["data.tools.t.meta", "data.tools.t.deny", "data.tools.t.confirm",
                                    "data.tools.t.annotations"], "input_text": inp}))
            exp = expected_from_opa(o["results"]) if "results" in o else {"error": "opa " + J(o)}
            if rg is None:
                got = {"error": "regent refused to load: " + load_err, "code": "load"}
            else:
                resp = rg.call("tools/resolve", f'{{"name":"t","arguments":{args}}}')
                if resp is None:
                    got = None
                    rg.close()
                    try:
                        rg = Regent(cat, os.path.join(outdir, name + f".stderr.{i}"))
                    except Exception as e:
                        rg, load_err = None, str(e)
                else:
                    got = from_regent(resp)
                    if "error" in got and got.get("code") == -32603:
                        got["log"] = rg.last_error()
                    elif "error" not in got:
                        rg.last_error()
            cls = classify(exp, got)
            counts[cls] = counts.get(cls, 0) + 1
            rows.append({"args": args, "class": cls, "opa": o.get("results"), "expected": exp, "regent": got})
        if rg:
            rg.close()
        with open(os.path.join(outdir, name + ".jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        summary[name] = {"counts": counts, "check_rc": chk.returncode, "check": check_out[-3000:],
                         "opa_load": lo}
        print(name, counts, "check rc", chk.returncode, flush=True)
    prev = {}
    sp = os.path.join(outdir, "summary.json")
    if filt and os.path.exists(sp):
        prev = json.load(open(sp))
    prev.update(summary)
    with open(sp, "w") as f:
        json.dump(prev, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
