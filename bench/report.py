#!/usr/bin/env python3
"""Turn bench/run's results.jsonl into one Markdown report.

usage: report.py RESULTS.jsonl MACHINE.txt CPU.dat > report.md

Each (mode, proxy, concurrency) cell is the median of its runs. CPU.dat is
the gnuplot input for bench/chart.gnuplot (CPU per request at c=64).
"""
import json
import statistics
import sys

PROXIES = ["sandgate", "baseline", "squid", "squid-bump", "tinyproxy",
           "direct"]
MODES = ["http", "connect", "connect-churn", "bulk", "blocked", "terminate",
         "terminate-churn"]
# The TLS-terminating rows are compared with squid-openssl's ssl-bump.
TERMINATE = ("terminate", "terminate-churn")


def rival(mode):
    return "squid-bump" if mode in TERMINATE else "squid"


def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, nd=0):
    if v is None:
        return "–"
    if nd == 0 and v >= 1000000:
        return "> 1 s"
    if nd == 0:
        return f"{v:,.0f}"
    return f"{v:,.{nd}f}"


def fr(v):
    return fmt(v, 3)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def cells(rows):
    """(mode, proxy, c) -> medians."""
    out = {}
    groups = {}
    for r in rows:
        if r.get("mode") in MODES:
            groups.setdefault((r["mode"], r["proxy"], r["concurrency"]),
                              []).append(r)
    for k, g in groups.items():
        out[k] = {
            "runs": len(g),
            "rps": med(g, "rps"),
            "p50": med(g, "p50_us"),
            "p99": med(g, "p99_us"),
            "cpu": med(g, "proxy_cpu_us_per_req"),
            "mib_s": med(g, "mib_s"),
            "cpu_gib": med(g, "proxy_cpu_ms_per_gib"),
            "errors": sum(r.get("errors", 0) for r in g),
            "log_ok": all(r.get("lines_eq_requests") is True for r in g),
            "log_attempts": sum(r.get("log_attempts",
                                      r.get("log_lines", 0)) for r in g),
            "req_total": sum(r.get("requests_total", 0) for r in g),
        }
    return out


def main_table(c):
    if any(k[0] in TERMINATE for k in c):
        print("terminate rows: ÷ squid is ÷ squid-bump (squid-openssl "
              "with ssl-bump).\n")
    print("| mode | c | proxy | req/s (bulk: MiB/s) | p50 µs | p99 µs "
          "| proxy CPU µs/req (bulk: ms/GiB) | errors | rate ÷ squid "
          "| CPU ÷ squid | rate ÷ direct |")
    print("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    concs = sorted({k[2] for k in c})
    for mode in MODES:
        for conc in concs:
            sq = c.get((mode, rival(mode), conc))
            di = c.get((mode, "direct", conc))
            if mode == "connect" and di is None:
                di = c.get(("http", "direct", conc))
            for p in PROXIES:
                v = c.get((mode, p, conc))
                if v is None:
                    continue
                bulk = mode == "bulk"
                rate = v["mib_s"] if bulk else v["rps"]
                cpu = v["cpu_gib"] if bulk else v["cpu"]
                srate = cpu_s = drate = None
                if sq:
                    srate = sq["mib_s"] if bulk else sq["rps"]
                    cpu_s = sq["cpu_gib"] if bulk else sq["cpu"]
                if di:
                    drate = di["mib_s"] if bulk else di["rps"]
                print(f"| {mode} | {conc} | {p} | {fmt(rate)} | "
                      f"{fmt(v['p50'])} | {fmt(v['p99'])} | "
                      f"{fmt(cpu, 1)} | {v['errors']} | "
                      f"{fmt(ratio(rate, srate), 2)} | "
                      f"{fmt(ratio(cpu, cpu_s), 2)} | "
                      f"{fmt(ratio(rate, drate), 2)} |")


def baseline_table(c):
    """This build against --baseline's, row by row: CPU per request
    (bulk: per GiB) and rate, and their ratios. Returns the worst CPU
    ratio, or None without a baseline."""
    if not any(k[1] == "baseline" for k in c):
        return None
    print("| mode | c | CPU this build | CPU baseline | CPU ÷ baseline "
          "| rate this build | rate baseline | rate ÷ baseline | runs |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    worst = None
    concs = sorted({k[2] for k in c})
    for mode in MODES:
        for conc in concs:
            a, b = c.get((mode, "sandgate", conc)), c.get((mode, "baseline",
                                                          conc))
            if a is None or b is None:
                continue
            bulk = mode == "bulk"
            ca, cb = (a["cpu_gib"], b["cpu_gib"]) if bulk else (a["cpu"],
                                                               b["cpu"])
            ra, rb = (a["mib_s"], b["mib_s"]) if bulk else (a["rps"],
                                                           b["rps"])
            r = ratio(ca, cb)
            if r is not None and (worst is None or r > worst[0]):
                worst = (r, mode, conc)
            print(f"| {mode} | {conc} | {fmt(ca, 1)} | {fmt(cb, 1)} | "
                  f"{fmt(r, 3)} | {fmt(ra)} | {fmt(rb)} | "
                  f"{fmt(ratio(ra, rb), 3)} | {a['runs']} |")
    return worst


def get(c, mode, p, conc, key):
    v = c.get((mode, p, conc))
    return v[key] if v else None


def verdict(ok):
    if ok is None:
        return "not measured"
    return "**met**" if ok else "**not met**"


def cmp(a, b, op, limit):
    r = ratio(a, b)
    if r is None:
        return None, None
    return (r <= limit if op == "le" else r >= limit), r


def targets(c, rows):
    out = []

    def add(name, ok, detail):
        out.append((name, verdict(ok), detail))

    sg = lambda m, k, conc=64: get(c, m, "sandgate", conc, k)
    sq = lambda m, k, conc=64: get(c, m, "squid", conc, k)
    tp = lambda m, k, conc=64: get(c, m, "tinyproxy", conc, k)
    di = lambda m, k, conc=64: get(c, m, "direct", conc, k)

    ok, r = cmp(sg("http", "cpu"), sq("http", "cpu"), "le", 1 / 3)
    add("http CPU/req ≤ 1/3 of squid (c=64)", ok, f"ratio {fr(r)}")
    ok1, r1 = cmp(sg("connect", "cpu"), sq("connect", "cpu"), "le", 0.5)
    ok2, r2 = cmp(sg("connect", "cpu"), tp("connect", "cpu"), "le", 0.5)
    both = None if ok1 is None or ok2 is None else ok1 and ok2
    add("connect keep-alive CPU/req ≤ 1/2 of squid and tinyproxy (c=64)",
        both, f"÷ squid {fr(r1)}, ÷ tinyproxy {fr(r2)}")
    ok, r = cmp(sg("connect-churn", "cpu"), sq("connect-churn", "cpu"),
                "le", 0.5)
    add("connect-churn CPU/req ≤ 1/2 of squid (c=64)", ok,
        f"ratio {fr(r)}")
    for mode in TERMINATE:
        for conc in (1, 64):
            a = get(c, mode, "sandgate", conc, "cpu")
            b = get(c, mode, "squid-bump", conc, "cpu")
            ok, r = cmp(a, b, "le", 1)
            add(f"{mode} CPU/req ≤ squid ssl-bump's (c={conc})", ok,
                f"{fmt(a, 1)} vs {fmt(b, 1)} µs, ratio {fr(r)}")
    ok, r = cmp(sg("http", "rps"), sq("http", "rps"), "ge", 1.5)
    add("http req/s ≥ 1.5× squid (c=64)", ok, f"ratio {fr(r)}")
    d = di("connect", "rps") or di("http", "rps")
    ok, r = cmp(sg("connect", "rps"), d, "ge", 0.95)
    add("connect keep-alive req/s ≥ 95% of direct (c=64)", ok,
        f"ratio {fr(r)}")
    for conc in (1, 64):
        ok, r = cmp(sg("bulk", "mib_s", conc), di("bulk", "mib_s", conc),
                    "ge", 0.9)
        add(f"bulk throughput ≥ 90% of direct (c={conc})", ok,
            f"ratio {fr(r)}")
        ok, r = cmp(sg("bulk", "cpu_gib", conc), sq("bulk", "cpu_gib", conc),
                    "le", 1 / 3)
        add(f"bulk CPU/GiB ≤ 1/3 of squid (c={conc})", ok,
            f"ratio {fr(r)}")
    idle = [r for r in rows if r.get("mode") == "idle" and
            r.get("proxy") == "sandgate"]
    if idle:
        b = idle[0]["rss_per_tunnel_bytes"]
        add(f"idle RSS ≤ 8 KiB per tunnel at {idle[0]['tunnels']} tunnels",
            b <= 8192 and idle[0]["errors"] == 0, f"{b / 1024:.1f} KiB")
    else:
        add("idle RSS ≤ 8 KiB per tunnel", None, "")
    v = c.get(("blocked", "sandgate", 64))
    if v:
        add("blocked: every block logged, ≥ 20,000 blocks/s (c=64)",
            v["log_ok"] and v["rps"] >= 20000,
            f"{fmt(v['rps'])} blocks/s, {v['log_attempts']} attempts "
            f"logged (lines and summary counts) for {v['req_total']} "
            f"blocked requests")
    else:
        add("blocked: every block logged, ≥ 20,000 blocks/s", None, "")
    pol = {r["entries"]: r for r in rows if r.get("mode") == "policy"}
    if 100000 in pol and 10 in pol:
        p, q = pol[100000], pol[10]
        add("policy: 100k entries load < 1 s", p["load_ms"] < 1000,
            f"{p['load_ms']:.0f} ms")
        rh, rm = p["hit_ns"] / q["hit_ns"], p["miss_ns"] / q["miss_ns"]
        add("policy: match at 100k within 1.5× of at 10",
            rh <= 1.5 and rm <= 1.5,
            f"hits {rh:.2f}×, misses {rm:.2f}×")
    ctl = {r["name"]: r for r in rows if r.get("mode") == "controller"}
    if "sandgate-exec" in ctl and "median_ms" in ctl["sandgate-exec"]:
        e = ctl["sandgate-exec"]["median_ms"]
        a = ctl.get("api-exec-wire", ctl.get("api-exec-curl", {})).get(
            "median_ms")
        dk = ctl.get("docker-exec", {}).get("median_ms")
        ok = None if a is None or dk is None else e <= 1.3 * a and e < dk
        add("exec -- true ≤ 1.3× raw API round trip and faster than "
            "docker exec", ok,
            f"{e:.1f} ms vs API on the wire {fmt(a, 1)} ms "
            f"({fmt(ratio(e, a), 2)}×), "
            f"docker exec {fmt(dk, 1)} ms")
    else:
        add("exec -- true vs raw API and docker exec", None,
            ctl.get("all", {}).get("unavailable", ""))
    ws = {r["name"]: r for r in rows if r.get("mode") == "workspace"}
    w = ws.get("files-10000")
    if w and "create_ms" in w:
        add("create of 10,000 files < 1 s", w["create_ms"] < 1000,
            f"{w['create_ms']:.0f} ms")
        dm = w["diff_unchanged_ms"]
        add("diff of unchanged 10,000-file tree < 0.3 s",
            None if dm is None else dm < 300, f"{fmt(dm)} ms")
    else:
        add("workspace targets", None,
            (w or ws.get("all") or {}).get("unavailable", ""))
    print("| target | verdict | measured |")
    print("|---|---|---|")
    for name, v, d in out:
        print(f"| {name} | {v} | {d} |")


def other_tables(rows):
    idle = [r for r in rows if r.get("mode") == "idle"]
    if idle:
        print("\n### Idle tunnels\n")
        print("| proxy | tunnels | errors | RSS before KiB | RSS after KiB "
              "| bytes per tunnel |")
        print("|---|--:|--:|--:|--:|--:|")
        for r in idle:
            print(f"| {r['proxy']} | {r['tunnels']} | {r['errors']} | "
                  f"{r['rss_before_kib']} | {r['rss_after_kib']} | "
                  f"{r['rss_per_tunnel_bytes']:,.0f} |")
    pol = [r for r in rows if r.get("mode") == "policy"]
    if pol:
        print("\n### Policy scaling (policybench)\n")
        print("| entries | load ms (best of 3) | decide ns, hot hit "
              "| decide ns, spread hit | decide ns, miss |")
        print("|--:|--:|--:|--:|--:|")
        for r in pol:
            print(f"| {r['entries']:,} | {r['load_ms']:.1f} | "
                  f"{fmt(r.get('hot_ns'), 1)} | {r['hit_ns']:.1f} | "
                  f"{r['miss_ns']:.1f} |")
    e2e = [r for r in rows if r.get("mode") == "policy-e2e"]
    if e2e:
        print("\n### Policy size end to end (sandgate-proxy, HTTP "
              "keep-alive, c=64, medians)\n")
        print("| entries in force | runs | req/s | p99 µs "
              "| proxy CPU µs/req | CPU ÷ at 10 |")
        print("|--:|--:|--:|--:|--:|--:|")
        by = {}
        for r in e2e:
            by.setdefault(r["entries"], []).append(r)
        base = med(by.get(10, []), "proxy_cpu_us_per_req")
        for n in sorted(by):
            g = by[n]
            cpu = med(g, "proxy_cpu_us_per_req")
            print(f"| {n:,} | {len(g)} | {fmt(med(g, 'rps'))} | "
                  f"{fmt(med(g, 'p99_us'))} | {fmt(cpu, 2)} | "
                  f"{fmt(ratio(cpu, base), 3)} |")
    ctl = [r for r in rows if r.get("mode") == "controller"]
    if ctl:
        print("\n### Controller (hyperfine medians)\n")
        print("| command | median ms | mean ms | stddev ms | runs |")
        print("|---|--:|--:|--:|--:|")
        for r in ctl:
            if "median_ms" in r and r["name"] == "api-exec-wire":
                print(f"| {r['name']} (sum of curl time_total) | "
                      f"{r['median_ms']:.1f} | – | – | {r['runs']} |")
            elif "median_ms" in r:
                print(f"| {r['name']} | {r['median_ms']:.1f} | "
                      f"{r['mean_ms']:.1f} | {r['stddev_ms']:.1f} | "
                      f"{r['runs']} |")
            else:
                print(f"| {r['name']} | unavailable: "
                      f"{r.get('unavailable', 'failed')} | | | |")
    ws = [r for r in rows if r.get("mode") == "workspace"]
    if ws:
        print("\n### Workspace (wall ms)\n")
        print("| tree | create | diff, unchanged | files changed | "
              "diff --stat, changed | apply --all |")
        print("|---|--:|--:|--:|--:|--:|")
        for r in ws:
            if "create_ms" in r:
                print(f"| {r['name']} | {fmt(r['create_ms'])} | "
                      f"{fmt(r['diff_unchanged_ms'])} | {r['changed']:,} | "
                      f"{fmt(r['diff_changed_ms'])} | "
                      f"{fmt(r['apply_all_ms'])} |")
            else:
                print(f"| {r['name']} | unavailable: {r['unavailable']} "
                      f"| | | | |")


def cpu_dat(c, path):
    with open(path, "w") as f:
        f.write("# mode sandgate squid tinyproxy (proxy CPU us per request "
                "at c=64; bulk: us per MiB)\n")
        for mode in ["http", "connect", "connect-churn", "blocked", "bulk"]:
            vals = []
            for p in ["sandgate", "squid", "tinyproxy"]:
                if mode == "bulk":
                    v = get(c, mode, p, 64, "cpu_gib")
                    v = v * 1000 / 1024 if v is not None else None
                else:
                    v = get(c, mode, p, 64, "cpu")
                vals.append("NaN" if v is None else f"{v:.2f}")
            if all(v == "NaN" for v in vals):
                continue
            label = "bulk/MiB" if mode == "bulk" else mode
            f.write(f"\"{label}\" {' '.join(vals)}\n")


def main():
    rows = load(sys.argv[1])
    with open(sys.argv[2]) as f:
        machine = f.read().strip()
    c = cells(rows)
    print("## Machine\n")
    print("```\n" + machine + "\n```\n")
    if c:
        print("## Proxies (median of runs)\n")
        main_table(c)
        print()
    worst = None
    if any(k[1] == "baseline" for k in c):
        print("## This build and the baseline (same run, same load)\n")
        worst = baseline_table(c)
        print()
    print("## Targets\n")
    targets(c, rows)
    if worst is not None:
        print(f"| CPU per request within 5 % of the baseline on every row "
              f"| {verdict(worst[0] <= 1.05)} | worst {worst[0]:.3f} "
              f"({worst[1]}, c={worst[2]}) |")
    notes = [r["text"] for r in rows if r.get("mode") == "note"]
    if notes:
        print("\n### Notes\n")
        for t in notes:
            print(f"- {t}")
    other_tables(rows)
    cpu_dat(c, sys.argv[3])


if __name__ == "__main__":
    main()
